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
	case k < 6:
		b.WriteString([]string{`"ping 1"`, `""`, `"a\"b"`, `"x\\"`, `"\\\""`, `"é\n"`, `"{\"content\":1}"`, `"\u00e9"`}[rng.Intn(8)])
	case k < 7:
		// A long string, its escapes anywhere (before its closing quote
		// too): read from quote to quote.
		b.WriteByte('"')
		for n := 20 + rng.Intn(80); n > 0; n-- {
			b.WriteString([]string{"a", " ", `\"`, `\\`, `\n`, "é", `\u0041`, "}", "]", ","}[rng.Intn(10)])
		}
		b.WriteByte('"')
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

// TestStrIsGjsons: Str(v) is gjson.Parse(v).Str for every value of the
// random objects, their fields' and the objects themselves.
func TestStrIsGjsons(t *testing.T) {
	rng := rand.New(rand.NewSource(38))
	for i := 0; i < 20000; i++ {
		var b strings.Builder
		randValue(rng, &b, 0)
		obj := strings.TrimSpace(b.String())
		values := []string{obj}
		gjson.Parse(obj).ForEach(func(_, v gjson.Result) bool {
			values = append(values, v.Raw)
			return true
		})
		for _, v := range values {
			if got, want := Str(v), gjson.Parse(v).Str; got != want {
				t.Fatalf("Str(%q) = %q, gjson %q", v, got, want)
			}
		}
	}
}

type pair struct{ key, value gjson.Result }

func pairs(each func(func(key, value gjson.Result) bool), stop int) []pair {
	var out []pair
	each(func(k, v gjson.Result) bool {
		out = append(out, pair{k, v})
		return len(out) != stop
	})
	return out
}

// TestEachIsForEach: on random valid JSON values and the values inside
// them, Each calls its function with what ForEach calls it with, and
// stops when ForEach does.
func TestEachIsForEach(t *testing.T) {
	rng := rand.New(rand.NewSource(39))
	for i := 0; i < 20000; i++ {
		var b strings.Builder
		randValue(rng, &b, 0)
		top := gjson.Parse(b.String())
		values := []gjson.Result{top}
		top.ForEach(func(_, v gjson.Result) bool {
			values = append(values, v)
			return true
		})
		for _, v := range values {
			stop := rng.Intn(4)
			got := pairs(func(f func(k, v gjson.Result) bool) { Each(v, f) }, stop)
			want := pairs(v.ForEach, stop)
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("Each(%q) = %#v, ForEach %#v", v.Raw, got, want)
			}
		}
	}
}

// TestGetAllIsGet: GetAll reads what Get reads, key by key.
func TestGetAllIsGet(t *testing.T) {
	rng := rand.New(rand.NewSource(40))
	spans := make([][2]int, len(keys))
	out := make([]gjson.Result, len(keys))
	for i := 0; i < 50000; i++ {
		var b strings.Builder
		randValue(rng, &b, 0)
		obj := b.String()
		GetAll(obj, keys, spans, out)
		for j, key := range keys {
			if want := gjson.Get(obj, key); !reflect.DeepEqual(out[j], want) {
				t.Fatalf("GetAll(%q)[%q] = %#v, gjson %#v", obj, key, out[j], want)
			}
		}
	}
}
