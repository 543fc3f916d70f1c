package jsonscan

import (
	"math/rand"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

func TestScanObject(t *testing.T) {
	tests := []struct {
		name      string
		body      string
		ok        bool
		elements  []string
		model     string
		escaped   bool
		arrayText string
	}{
		{"plain", `{"model":"m","messages":[{"a":1}, "x" ,[2]],"z":{"messages":[]}}`, true, []string{`{"a":1}`, `"x"`, `[2]`}, `"m"`, false, `[{"a":1}, "x" ,[2]]`},
		{"repeated key: the last wins", `{"messages":[1],"model":"a","messages":[2,3],"model":"b"}`, true, []string{"2", "3"}, `"b"`, false, `[2,3]`},
		{"escaped key", `{"mess\u0061ges":[1]}`, true, nil, "", true, ""},
		{"not an array", `{"messages":{"a":[1]}}`, true, nil, "", false, ""},
		{"empty array", `{"messages":[ ]}`, true, nil, "", false, "[ ]"},
		{"not an object", `[{"messages":[1]}]`, false, nil, "", false, ""},
		{"truncated", `{"messages":[1,`, false, nil, "", false, ""},
		{"trailing garbage", `{"messages":[1]} x`, false, nil, "", false, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			obj, ok := ScanObject([]byte(tc.body), "messages")
			if ok != tc.ok {
				t.Fatalf("ok = %v, want %v", ok, tc.ok)
			}
			if !ok {
				return
			}
			if len(obj.Elements) != len(tc.elements) {
				t.Fatalf("elements %v, want %v", obj.Elements, tc.elements)
			}
			for i, sp := range obj.Elements {
				if got := tc.body[sp[0]:sp[1]]; got != tc.elements[i] {
					t.Errorf("element %d = %q, want %q", i, got, tc.elements[i])
				}
			}
			if got := tc.body[obj.Array[0]:obj.Array[1]]; got != tc.arrayText {
				t.Errorf("array = %q, want %q", got, tc.arrayText)
			}
			sp, found := obj.Get("model")
			if got := tc.body[sp[0]:sp[1]]; found != (tc.model != "") || got != tc.model {
				t.Errorf("model = %q (%v), want %q", got, found, tc.model)
			}
			if obj.EscapedKey != tc.escaped {
				t.Errorf("escaped = %v", obj.EscapedKey)
			}
		})
	}
}

// TestElementKeysOnce: on random arrays of objects — keys repeated,
// escaped, nested, in any order — ElementKeysOnce is false exactly when an
// element writes a recorded key twice or any key with an escape; when it
// is true, each recorded span is its key's first occurrence (the value a
// decoder taking the first one reads).
func TestElementKeysOnce(t *testing.T) {
	keys := []string{"role", "content"}
	pieces := []string{`"role":"user"`, `"content":"x"`, `"content":[1,{"role":2}]`, `"name":"n"`, `"r\u006fle":"a"`, `"x\\":1`, `"nest":{"content":3}`}
	rng := rand.New(rand.NewSource(37))
	for i := 0; i < 20000; i++ {
		var b strings.Builder
		b.WriteString(`{"messages":[`)
		twice := false
		for e, n := 0, 1+rng.Intn(4); e < n; e++ {
			if e > 0 {
				b.WriteByte(',')
			}
			b.WriteByte('{')
			seen := map[string]bool{}
			for f, m := 0, rng.Intn(4); f < m; f++ {
				if f > 0 {
					b.WriteByte(',')
				}
				p := pieces[rng.Intn(len(pieces))]
				b.WriteString(p)
				k, _, _ := strings.Cut(p, ":")
				if strings.Contains(k, `\`) || (seen[k] && (k == `"role"` || k == `"content"`)) {
					twice = true
				}
				seen[k] = true
			}
			b.WriteByte('}')
		}
		b.WriteString(`]}`)
		body := b.String()
		obj, ok := ScanObject([]byte(body), "messages", keys...)
		if !ok {
			t.Fatalf("%s: not scanned", body)
		}
		if obj.ElementKeysOnce == twice {
			t.Fatalf("%s: ElementKeysOnce %v", body, obj.ElementKeysOnce)
		}
		if !obj.ElementKeysOnce {
			continue
		}
		for e, sp := range obj.Elements {
			elem := body[sp[0]:sp[1]]
			for j, k := range keys {
				f := obj.ElementFields[e*len(keys)+j]
				first := gjson.Get(elem, k)
				if (f[1] > 0) != first.Exists() || (f[1] > 0 && (elem[f[0]:f[1]] != first.Raw || f[0] != first.Index)) {
					t.Fatalf("%s: element %d key %s: span %v, first occurrence %q at %d", body, e, k, f, first.Raw, first.Index)
				}
			}
		}
	}
}
