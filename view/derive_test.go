package view

import (
	"errors"
	"strings"
	"testing"
)

// request returns a request over body whose items are the given spans.
func request(body string, arr [2]int, spans ...[2]int) *Request {
	r := &Request{Body: []byte(body), Array: arr}
	for i, sp := range spans {
		r.Items = append(r.Items, Item{Start: sp[0], End: sp[1], Tokens: 10 + i, Hash: uint64(100 + i)})
	}
	return r
}

// TestSpliceLayout: the layout says where SpliceArray put every item, the
// kept ones with their counts and hashes, the inserted ones to count.
func TestSpliceLayout(t *testing.T) {
	body := `{"m":[ {"a":1} , {"b":2},{"c":3} ],"x":1}`
	r := request(body, [2]int{5, 35}, [2]int{7, 14}, [2]int{17, 24}, [2]int{25, 32})
	e := Edit{From: 1, To: 2, Insert: [][]byte{[]byte(`{"s":"one"}`), []byte(`{"t":2}`)}}
	b, err := SpliceArray(r, r.Array, e)
	if err != nil {
		t.Fatal(err)
	}
	out := string(b)
	l, err := SpliceLayout(r, r.Array, e)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{`{"a":1}`, `{"s":"one"}`, `{"t":2}`, `{"c":3}`}
	src := []int{0, -1, -1, 2}
	if len(l.Items) != len(want) || out[l.Array[0]:l.Array[1]] != `[{"a":1},{"s":"one"},{"t":2},{"c":3}]` {
		t.Fatalf("layout %+v of %s", l, out)
	}
	for i, it := range l.Items {
		if out[it.Start:it.End] != want[i] || l.Src[i] != src[i] {
			t.Errorf("item %d: %q src %d, want %q src %d", i, out[it.Start:it.End], l.Src[i], want[i], src[i])
		}
		if src[i] >= 0 && (it.Tokens != r.Items[src[i]].Tokens || it.Hash != r.Items[src[i]].Hash) || src[i] < 0 && it.Tokens != -1 {
			t.Errorf("item %d: %d tokens hash %d", i, it.Tokens, it.Hash)
		}
	}
}

// TestPatchLayout: items after a patch shift by what it added; the
// patched item is to count again; a patch outside every item is not
// derivable.
func TestPatchLayout(t *testing.T) {
	body := `{"m":[{"a":"long text"},{"b":2},{"c":"xx"}]}`
	r := request(body, [2]int{5, 43}, [2]int{6, 23}, [2]int{24, 31}, [2]int{32, 42})
	patches := []Patch{{Start: 11, End: 22, With: []byte(`"d"`)}, {Start: 37, End: 41, With: []byte(`"yyyy"`)}}
	out := string(ApplyPatches(r.Body, patches))
	l, err := PatchLayout(r, patches)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{`{"a":"d"}`, `{"b":2}`, `{"c":"yyyy"}`}
	src := []int{-1, 1, -1}
	if out[l.Array[0]:l.Array[1]] != `[{"a":"d"},{"b":2},{"c":"yyyy"}]` {
		t.Fatalf("array %v of %s", l.Array, out)
	}
	for i, it := range l.Items {
		if out[it.Start:it.End] != want[i] || l.Src[i] != src[i] {
			t.Errorf("item %d: %q src %d, want %q src %d", i, out[it.Start:it.End], l.Src[i], want[i], src[i])
		}
	}
	if _, err := PatchLayout(r, []Patch{{Start: 2, End: 3}}); !errors.Is(err, ErrNotDerivable) {
		t.Errorf("a patch before the items: %v", err)
	}
	if _, err := PatchLayout(r, []Patch{{Start: 20, End: 26}}); !errors.Is(err, ErrNotDerivable) {
		t.Errorf("a patch across two items: %v", err)
	}
}

// TestCompose: an edit of a patched copy, composed onto the request the
// patches were made of, splices in one pass the very bytes splicing the
// copy would; the layout says where each item went, the patched ones to
// count. Patches inside the items the edit replaces go with them; a
// patch across two items or out of the body is an error, not a panic.
func TestCompose(t *testing.T) {
	body := `{"m":[ {"a":"long text"} , {"b":"two"},{"c":"xx"}, {"d":"four four"} ],"x":1}`
	span := func(s string) [2]int { i := strings.Index(body, s); return [2]int{i, i + len(s)} }
	r := request(body, [2]int{5, strings.LastIndex(body, "]") + 1}, span(`{"a":"long text"}`), span(`{"b":"two"}`), span(`{"c":"xx"}`), span(`{"d":"four four"}`))
	patch := func(s, with string) Patch { sp := span(s); return Patch{Start: sp[0], End: sp[1], With: []byte(with)} }
	first := []Patch{patch(`"long text"`, `"A"`), patch(`"xx"`, `"cc"`), patch(`"four four"`, `"D"`)}
	pl, err := PatchLayout(r, first)
	if err != nil {
		t.Fatal(err)
	}
	mid := &Request{Body: ApplyPatches([]byte(body), append([]Patch(nil), first...)), Items: pl.Items, Array: pl.Array}
	if got := string(mid.Body); got != `{"m":[ {"a":"A"} , {"b":"two"},{"c":"cc"}, {"d":"D"} ],"x":1}` {
		t.Fatalf("patched copy %s", got)
	}
	// Item 1 replaced; item 2 patched again inside its first patch's
	// value; item 3 patched again beside its first patch.
	at := func(i int, s string) int { return mid.Items[i].Start + strings.Index(mid.Raw(i), s) }
	e := Edit{From: 1, To: 2, Insert: [][]byte{[]byte(`{"s":1}`)}, Patches: []Patch{
		{Start: at(2, `"cc"`) + 1, End: at(2, `"cc"`) + 2, With: []byte(`X`)},
		{Start: at(3, `"d"`), End: at(3, `"d"`) + 3, With: []byte(`"e"`)},
	}}
	want, err := SpliceArray(mid, mid.Array, e)
	if err != nil {
		t.Fatal(err)
	}
	if string(want) != `{"m":[{"a":"A"},{"s":1},{"c":"Xc"},{"e":"D"}],"x":1}` {
		t.Fatalf("splice of the copy %s", want)
	}
	c, err := Compose(r, first, mid, e)
	if err != nil {
		t.Fatal(err)
	}
	got, err := SpliceArray(r, r.Array, c)
	if err != nil || string(got) != string(want) {
		t.Fatalf("composed: %s (%v), want %s", got, err, want)
	}
	l, err := SpliceLayout(r, r.Array, c)
	if err != nil {
		t.Fatal(err)
	}
	items := []string{`{"a":"A"}`, `{"s":1}`, `{"c":"Xc"}`, `{"e":"D"}`}
	for i, it := range l.Items {
		if string(got[it.Start:it.End]) != items[i] || l.Src[i] != -1 || it.Tokens != -1 {
			t.Errorf("item %d: %q src %d tokens %d, want %q to count", i, got[it.Start:it.End], l.Src[i], it.Tokens, items[i])
		}
	}
	if string(got[l.Array[0]:l.Array[1]]) != `[{"a":"A"},{"s":1},{"c":"Xc"},{"e":"D"}]` {
		t.Errorf("array %v", l.Array)
	}
	// Nothing patched twice and nothing replaced: the first patches.
	c, err = Compose(r, first, mid, Edit{From: 4, To: 4})
	if err != nil || len(c.Patches) != len(first) {
		t.Fatalf("%v: %+v", err, c.Patches)
	}
	for _, bad := range []Edit{
		{From: 0, To: 0, Patches: []Patch{{Start: 20, End: 30}}},                       // across two items
		{From: 0, To: 0, Patches: []Patch{{Start: 2, End: 3}}},                         // before the items
		{From: 0, To: 0, Patches: []Patch{{Start: 60, End: 500}}},                      // out of the body
		{From: 0, To: 0, Patches: []Patch{{Start: 10, End: 14}, {Start: 12, End: 13}}}, // overlapping
		{From: 3, To: 9},
		{From: 2, To: 1},
	} {
		if out, err := SpliceArray(r, r.Array, bad); err == nil {
			t.Errorf("%+v: spliced %s", bad, out)
		}
		if _, err := SpliceLayout(r, r.Array, bad); !errors.Is(err, ErrNotDerivable) {
			t.Errorf("%+v: layout %v", bad, err)
		}
	}
	if _, err := Compose(r, first, &Request{Body: mid.Body, Items: mid.Items[:3]}, Edit{}); err == nil {
		t.Error("a copy with an item less composes")
	}
}

// TestParsePatched: the items no patch touches keep their parse, shifted
// to where they stand in the patched body; the patched one is parsed
// alone, keeping its role and glue; a request not parsed, a parse that
// reads another role in the item alone or refuses it leave out unparsed.
func TestParsePatched(t *testing.T) {
	body := `{"m":[{"r":"a","v":"x"},{"r":"t","v":"long output"},{"r":"a","v":"y"}]}`
	items := func(b string) []Item {
		var out []Item
		for at := 0; ; {
			i := strings.Index(b[at:], `{"r"`)
			if i < 0 {
				return out
			}
			s := at + i
			e := s + strings.IndexByte(b[s:], '}') + 1
			out = append(out, Item{Start: s, End: e})
			at = e
		}
	}
	// parse: the role from "r", one output spanning the item; an item
	// whose value says "bad" is refused, one whose value says "user" is
	// read as a user's, and a tool's ("t") must follow an assistant's
	// (it answers a call there, as Gemini's codec checks).
	parses := 0
	parse := func(r *Request) error {
		parses++
		for i := range r.Items {
			raw := r.Raw(i)
			role := raw[6:7]
			switch {
			case strings.Contains(raw, "bad"):
				return errors.New("refused")
			case strings.Contains(raw, "user"):
				role = "u"
			}
			if role == "t" && (i == 0 || r.Items[i-1].Role != "a") {
				return errors.New("a tool's item answers no call")
			}
			r.Items[i].Role = role
			r.Items[i].Glue = role == "t" && i > 0
			r.Items[i].Outputs = []Output{{Start: r.Items[i].Start, End: r.Items[i].End}}
			r.Items[i].Calls = []Call{{ID: "c", ArgsSpan: [2]int{r.Items[i].Start, r.Items[i].Start + 1}}}
		}
		r.Parsed = true
		return nil
	}
	in := &Request{Body: []byte(body), Items: items(body)}
	if err := ParsePatched(in, &Request{Body: in.Body, Items: items(body)}, nil, parse); err == nil {
		t.Fatal("an unparsed request: no error")
	}
	if err := parse(in); err != nil {
		t.Fatal(err)
	}
	in.Head = 1
	v := strings.Index(body, `"long output"`)
	for _, tc := range []struct {
		with string
		ok   bool
	}{{`"short"`, true}, {`"a much longer output than before"`, true}, {`"bad"`, false}, {`"user"`, false}} {
		patches := []Patch{{Start: v, End: v + len(`"long output"`), With: []byte(tc.with)}}
		patched := string(ApplyPatches([]byte(body), patches))
		out := &Request{Body: []byte(patched), Items: items(patched)}
		parses = 0
		err := ParsePatched(in, out, patches, parse)
		if (err == nil) != tc.ok || parses != 1 {
			t.Errorf("%s: %v after %d parses", tc.with, err, parses)
			continue
		}
		if !tc.ok {
			if out.Parsed || out.Items[0].Role != "" {
				t.Errorf("%s: refused, yet parsed: %+v", tc.with, out.Items)
			}
			continue
		}
		want := &Request{Body: out.Body, Items: items(patched)}
		if err := parse(want); err != nil {
			t.Fatal(err)
		}
		if !out.Parsed || out.Head != in.Head {
			t.Errorf("%s: parsed %v, head %d", tc.with, out.Parsed, out.Head)
		}
		for i := range want.Items {
			w, g := want.Items[i], out.Items[i]
			if g.Role != w.Role || g.Glue != w.Glue || g.Outputs[0] != w.Outputs[0] || g.Calls[0].ArgsSpan != w.Calls[0].ArgsSpan {
				t.Errorf("%s: item %d %+v, a parse of the body gives %+v", tc.with, i, g, w)
			}
		}
	}
}
