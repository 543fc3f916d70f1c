package field

import (
	"math/rand"
	"reflect"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/condense-proxy/condense-proxy/jsonscan"
)

var keys = []string{"content", "type", "role", "text", "a", "tool_call_id", "input_schema"}

// randValue writes a random JSON value of the pieces the codecs meet:
// objects with repeated and escaped keys, arrays, strings with escapes
// and quotes, numbers, literals, white space.
func randValue(rng *rand.Rand, b *strings.Builder, depth int) {
	ws := func() {
		if rng.Intn(4) == 0 {
			b.WriteString([]string{" ", "\n", "\t ", "\r\n  "}[rng.Intn(4)])
		}
	}
	ws()
	switch k := rng.Intn(9); {
	case k < 3 && depth < 3:
		b.WriteByte('{')
		for i, n := 0, rng.Intn(5); i < n; i++ {
			if i > 0 {
				b.WriteByte(',')
			}
			ws()
			key := keys[rng.Intn(len(keys))]
			switch rng.Intn(8) {
			case 0:
				key = strings.Replace(key, "t", `\u0074`, 1) // decodes to a key looked for
			case 1:
				key = `x\"` + key
			case 2:
				key = key + "x"
			}
			b.WriteString(`"` + key + `"`)
			ws()
			b.WriteByte(':')
			randValue(rng, b, depth+1)
		}
		ws()
		b.WriteByte('}')
	case k < 4 && depth < 3:
		b.WriteByte('[')
		for i, n := 0, rng.Intn(4); i < n; i++ {
			if i > 0 {
				b.WriteByte(',')
			}
			randValue(rng, b, depth+1)
		}
		ws()
		b.WriteByte(']')
	case k < 7:
		b.WriteString([]string{`"ping 1"`, `""`, `"a\"b"`, `"x\\"`, `"\\\""`, `"é\n"`, `"{\"content\":1}"`, `"\u00e9"`}[rng.Intn(8)])
	case k < 8:
		b.WriteString([]string{"0", "-1.5e3", "12", "1E+2"}[rng.Intn(4)])
	default:
		b.WriteString([]string{"true", "false", "null"}[rng.Intn(3)])
	}
	ws()
}

// TestGetIsGjsons: on random valid JSON values, Get returns what gjson.Get
// returns, for every key looked for.
func TestGetIsGjsons(t *testing.T) {
	rng := rand.New(rand.NewSource(37))
	for i := 0; i < 50000; i++ {
		var b strings.Builder
		randValue(rng, &b, 0)
		obj := b.String()
		if !jsonscan.Valid(obj) {
			t.Fatalf("generated invalid JSON %q", obj)
		}
		for _, key := range keys {
			if got, want := Get(obj, key), gjson.Get(obj, key); !reflect.DeepEqual(got, want) {
				t.Fatalf("Get(%q, %q) = %#v, gjson %#v", obj, key, got, want)
			}
		}
	}
}

func FuzzGetIsGjsons(f *testing.F) {
	f.Add(`{"role":"user","content":"ping 1"}`, "content")
	f.Add(`{"a":[1,{"content":2}],"content":{"x":"y"}}`, "content")
	f.Add(`{"c\u006fntent":1,"content":2}`, "content")
	f.Fuzz(func(t *testing.T, obj, key string) {
		if !jsonscan.Valid(obj) || key == "" || strings.ContainsAny(key, `.*?|#@!\:,{}[]"`+"` ") {
			return
		}
		if got, want := Get(obj, key), gjson.Get(obj, key); !reflect.DeepEqual(got, want) {
			t.Fatalf("Get(%q, %q) = %#v, gjson %#v", obj, key, got, want)
		}
	})
}
