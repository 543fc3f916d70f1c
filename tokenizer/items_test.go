package tokenizer

import (
	"testing"
)

func TestCheckItems(t *testing.T) {
	c := New(Options{MaxMessages: 2})
	if err := c.CheckItems(2); err != nil {
		t.Fatal(err)
	}
	if err := c.CheckItems(3); err == nil {
		t.Fatal("3 items over a limit of 2 accepted")
	}
}

// TestCachedKeepsKindsApart: the same raw item cached under two kinds, or
// two encodings, in turn, is two entries (itemKeys keeps its last base).
func TestCachedKeepsKindsApart(t *testing.T) {
	c := New(Options{})
	raw := `{"role":"user","content":"hi"}`
	for round := 0; round < 3; round++ {
		for i, k := range []struct{ enc, kind string }{{O200kBase, "msg"}, {O200kBase, "tools"}, {CL100kBase, "msg"}} {
			n, hit := c.Cached(k.enc, k.kind, raw, func() int { return 100 + i })
			if n != 100+i || hit != (round > 0) {
				t.Fatalf("round %d, %s/%s: count %d hit %v, want %d hit %v", round, k.enc, k.kind, n, hit, 100+i, round > 0)
			}
		}
	}
}
