package tokenizer

import (
	"reflect"
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

// TestBatchCountsARepeatOnce: a batch counts an item its request repeats
// once, the repeats hits; items whose hashes share a slot of its table
// each get their own count; every count is cached for the next request.
func TestBatchCountsARepeatOnce(t *testing.T) {
	c := New(Options{})
	b := c.Batch(O200kBase, "msg", 8) // a table of 16 slots: 7 and 23 share one
	var counted []uint64
	var hits []bool
	hashes := []uint64{5, 5, 5, 7, 23, 7, 5}
	for _, h := range hashes {
		n, hit := b.Count(h, func() int { counted = append(counted, h); return int(h) * 10 })
		if n != int(h)*10 {
			t.Fatalf("hash %d: count %d, want %d", h, n, h*10)
		}
		hits = append(hits, hit)
	}
	if want := []uint64{5, 7, 23, 7}; !reflect.DeepEqual(counted, want) {
		t.Errorf("counted %v, want %v", counted, want)
	}
	if want := []bool{false, true, true, false, false, false, true}; !reflect.DeepEqual(hits, want) {
		t.Errorf("hits %v, want %v", hits, want)
	}
	found := 0
	c.Lookup(O200kBase, "msg", len(hashes), func(i int) uint64 { return hashes[i] }, func(i, n int) {
		if n != int(hashes[i])*10 {
			t.Errorf("cached count of %d: %d", hashes[i], n)
		}
		found++
	})
	if found != len(hashes) {
		t.Errorf("the next request's look-up found %d of %d items", found, len(hashes))
	}
}
