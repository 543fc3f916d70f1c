package view

import (
	"errors"
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
	out := string(SpliceArray(r, r.Array, e))
	l := SpliceLayout(r, r.Array, e)
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
