package jsonscan

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

func TestValidMatchesEncodingJSON(t *testing.T) {
	cases := []string{
		``, ` `, `{}`, `[]`, `null`, `true`, `fals`, `0`, `-0`, `01`, `1.`, `1.5e+3`, `-`, `1e`, `"a"`, `"a`, `"\u00e9"`, `"\u00g9"`,
		`"\x"`, "\"tab\there\"", `"long string with \"escapes\" and \\ backslashes over eight bytes"`,
		`{"a":1,}`, `{"a" 1}`, `{"a":[1,2,{"b":null}],"c":"d"}`, `[1,2`, `[1 2]`, `{"a":1} x`, ` {"messages":[]} `,
		"\"\x7f\x80\xff\"", `{"k":"v"`, `{,}`, `[,]`, `{"a":tru}`, `"12345678\"12345678"`, "\"1234567\n\"",
	}
	for _, c := range cases {
		if got, want := Valid(c), json.Valid([]byte(c)); got != want {
			t.Errorf("Valid(%q) = %v, encoding/json says %v", c, got, want)
		}
	}
}

func FuzzValid(f *testing.F) {
	f.Add(`{"messages":[{"role":"user","content":"hi\n"}]}`)
	f.Add(`[1,"\u1234",{"a":null}]`)
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := Valid(s), json.Valid([]byte(s)); got != want {
			t.Fatalf("Valid(%q) = %v, encoding/json says %v", s, got, want)
		}
	})
}

// TestScanObjectElementFields: the fields of the array's elements named
// to ScanObject, in their order, spans relative to each element; nested
// objects and other arrays are not elements.
func TestScanObjectElementFields(t *testing.T) {
	keys := []string{"role", "content", "tool_call_id", "tool_calls"}
	s := `{"tools":[{"type":"function"}], "messages" : [ {"role":"user","content":"a"} ,{"role":"assistant","content":null}], "x":{"messages":[1]}}`
	obj, ok := ScanObject([]byte(s), "messages", keys...)
	if !ok || len(obj.Elements) != 2 || len(obj.ElementFields) != 2*len(keys) {
		t.Fatalf("scan %+v", obj)
	}
	if got := s[obj.Elements[0][0]:obj.Elements[0][1]]; got != `{"role":"user","content":"a"}` {
		t.Errorf("first span %q", got)
	}
	if got := s[obj.Elements[1][0]:obj.Elements[1][1]]; got != `{"role":"assistant","content":null}` {
		t.Errorf("second span %q", got)
	}
	if sp, _ := obj.Get("tools"); s[sp[0]:sp[1]] != `[{"type":"function"}]` {
		t.Errorf("tools span %q", s[sp[0]:sp[1]])
	}
	f := obj.ElementFields[:len(keys)]
	m := s[obj.Elements[0][0]:obj.Elements[0][1]]
	if m[f[0][0]:f[0][1]] != `"user"` || m[f[1][0]:f[1][1]] != `"a"` || f[3] != [2]int{} {
		t.Errorf("fields %+v of %s", f, m)
	}
	obj2, _ := ScanObject([]byte(`{"messages":[{"role":"assistant","tool_calls":[{"id":"x","function":{"role":"no","content":"no"}}],"content":null},{"role":"tool","tool_call_id":"x","content":"y"}]}`), "messages", keys...)
	f0, f1 := obj2.ElementFields[:4], obj2.ElementFields[4:]
	if f0[0][1]-f0[0][0] != len(`"assistant"`) || f0[3] == [2]int{} || f0[1][1]-f0[1][0] != 4 || f1[2][1]-f1[2][0] != 3 {
		t.Errorf("fields %+v %+v", f0, f1)
	}
	rep := `{"messages":[{"role":"a"}],"messages":[{"x":{"role":"no"}},{"role":"b"}]}`
	obj3, _ := ScanObject([]byte(rep), "messages", keys...)
	if len(obj3.ElementFields) != 2*len(keys) || obj3.ElementFields[0] != [2]int{} || obj3.ElementFields[len(keys)][1]-obj3.ElementFields[len(keys)][0] != 3 {
		t.Errorf("repeated array key: fields %v", obj3.ElementFields)
	}
	if _, ok := ScanObject([]byte(`[{"messages":[]}]`), "messages", keys...); ok {
		t.Error("array root scanned as an object")
	}
}

func TestFieldSpan(t *testing.T) {
	obj := `{"role":"tool", "content" : "a\"b\nc", "tool_call_id":"x1","n":{"content":"inner"}}`
	s, e, ok := FieldSpan(obj, "content")
	if !ok || obj[s:e] != `"a\"b\nc"` {
		t.Errorf("content span %q %v", obj[s:e], ok)
	}
	s, e, ok = FieldSpan(obj, "tool_call_id")
	if !ok || obj[s:e] != `"x1"` {
		t.Errorf("tool_call_id span %q", obj[s:e])
	}
	if _, _, ok := FieldSpan(obj, "missing"); ok {
		t.Error("missing key found")
	}
	if _, _, ok := FieldSpan(`[1]`, "a"); ok {
		t.Error("array treated as object")
	}
	if _, _, ok := FieldSpan(`{"a":1`, "a"); ok {
		t.Error("truncated object accepted")
	}
}

func TestFieldSpansElems(t *testing.T) {
	var elems [][2]int
	var sp [1][2]int
	obj := `{"content": [ {"a":1}, "x" ,[2]], "role":"user"}`
	if !FieldSpansElems(obj, []string{"role"}, sp[:], "content", &elems) {
		t.Fatal("valid object refused")
	}
	var got []string
	for _, e := range elems {
		got = append(got, obj[e[0]:e[1]])
	}
	if want := []string{`{"a":1}`, `"x"`, `[2]`}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("elements %q, want %q", got, want)
	}
	if obj[sp[0][0]:sp[0][1]] != `"user"` {
		t.Errorf("role span %v", sp[0])
	}
	// Not an array: no elements, whatever the slice held before.
	elems = append(elems[:0], [2]int{1, 2})
	if !FieldSpansElems(`{"content":"x"}`, nil, nil, "content", &elems) || len(elems) != 0 {
		t.Errorf("string content: elements %v", elems)
	}
	if FieldSpansElems(`{"content":[1,}`, nil, nil, "content", &elems) {
		t.Error("malformed array accepted")
	}
}

// TestFieldSpansValid: on valid JSON the skipping scan finds the same
// spans as the validating one — strings ending in escaped backslashes,
// escaped quotes, unicode escapes, nested values — and the same element
// spans.
func TestFieldSpansValid(t *testing.T) {
	keys := []string{"role", "content", "type"}
	objs := []string{
		`{"role":"user","content":"plain"}`,
		`{"role":"a\\","content":"b"}`,
		`{"role":"a\\\\","content":"\"quoted\" and \\\"more\\\"","type":"x"}`,
		`{"content":[{"type":"text","text":"x\"y"},{"type":"tool_result","content":"\\"}],"role":"assistant"}`,
		`{ "type" : "\u0041\\u0042\"" , "role" : { "nested": ["\\\"", "\"]"] }, "content": null }`,
		`{"k\"ey":"v","role":"r\\\\\\\"s"}`,
	}
	for _, o := range objs {
		if !Valid(o) {
			t.Fatalf("test input not valid JSON: %s", o)
		}
		want, got := make([][2]int, len(keys)), make([][2]int, len(keys))
		var wantElems, gotElems [][2]int
		okW := FieldSpansElems(o, keys, want, "content", &wantElems)
		okG := FieldSpansElemsValid(o, keys, got, "content", &gotElems)
		if okW != okG || !slices.Equal(want, got) || !slices.Equal(wantElems, gotElems) {
			t.Errorf("%s: validating %v %v %v, skipping %v %v %v", o, okW, want, wantElems, okG, got, gotElems)
		}
		if !FieldSpansValid(o, keys, got) || !slices.Equal(want, got) {
			t.Errorf("%s: FieldSpansValid %v, want %v", o, got, want)
		}
	}
	// Random strings of quotes, backslashes and letters, encoded by
	// encoding/json: every one valid.
	rng := rand.New(rand.NewPCG(1, 2))
	alphabet := []byte{'"', '\\', 'a', '/', 'n', 'u', ' '}
	for range 2000 {
		var val [3]string
		for i := range val {
			b := make([]byte, rng.IntN(12))
			for j := range b {
				b[j] = alphabet[rng.IntN(len(alphabet))]
			}
			val[i] = string(b)
		}
		enc, _ := json.Marshal(map[string]any{"role": val[0], "content": []string{val[1], val[2]}, "type": val[2]})
		o := string(enc)
		want, got := make([][2]int, len(keys)), make([][2]int, len(keys))
		var wantElems, gotElems [][2]int
		FieldSpansElems(o, keys, want, "content", &wantElems)
		if !FieldSpansElemsValid(o, keys, got, "content", &gotElems) || !slices.Equal(want, got) || !slices.Equal(wantElems, gotElems) {
			t.Fatalf("%s: validating %v %v, skipping %v %v", o, want, wantElems, got, gotElems)
		}
	}
}

// TestFieldSpansValidOnRandomObjects: on random valid objects — keys
// repeated (the array key as an array, then as something else), nested
// objects naming the same keys, white space anywhere, strings with
// escapes long and short — the skipping scan records what the validating
// one does.
func TestFieldSpansValidOnRandomObjects(t *testing.T) {
	keys := []string{"role", "content", "type"}
	values := []string{`"user"`, `"a\"b\\"`, `[1,{"content":[2]}, "x"]`, `[ ]`, `{"role":"nested","content":[3]}`, `null`, `-1.5e3`, `true`,
		`"` + strings.Repeat(`ab\"\\`, 20) + `"`, `[` + strings.Repeat(`"\\\"",`, 10) + `{}]`}
	ws := []string{"", " ", "\n\t", "\r\n "}
	rng := rand.New(rand.NewPCG(3, 4))
	for range 20000 {
		var b strings.Builder
		b.WriteString(ws[rng.IntN(len(ws))] + "{")
		for f, n := 0, rng.IntN(6); f < n; f++ {
			if f > 0 {
				b.WriteString(ws[rng.IntN(len(ws))] + ",")
			}
			key := []string{"role", "content", "type", "other", `c\u006fntent`}[rng.IntN(5)]
			b.WriteString(ws[rng.IntN(len(ws))] + `"` + key + `"` + ws[rng.IntN(len(ws))] + ":" + ws[rng.IntN(len(ws))] + values[rng.IntN(len(values))])
		}
		b.WriteString(ws[rng.IntN(len(ws))] + "}" + ws[rng.IntN(len(ws))])
		o := b.String()
		if !Valid(o) {
			t.Fatalf("test input not valid JSON: %s", o)
		}
		want, got := make([][2]int, len(keys)), make([][2]int, len(keys))
		wantElems, gotElems := [][2]int{{9, 9}}, [][2]int{{9, 9}}
		okW := FieldSpansElems(o, keys, want, "content", &wantElems)
		okG := FieldSpansElemsValid(o, keys, got, "content", &gotElems)
		if okW != okG || !slices.Equal(want, got) || !slices.Equal(wantElems, gotElems) {
			t.Fatalf("%s: validating %v %v %v, skipping %v %v %v", o, okW, want, wantElems, okG, got, gotElems)
		}
	}
}
