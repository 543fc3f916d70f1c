package tokenizer

import (
	"fmt"
	"math/rand"
	"strings"
	"sync"
	"testing"
)

func TestTextKnownCounts(t *testing.T) {
	c := New(Options{})
	tests := []struct {
		enc, text string
		want      int
	}{
		{CL100kBase, "tiktoken is great!", 6},
		{O200kBase, "hello world", 2},
		{CL100kBase, "hello world", 2},
		{O200kBase, "", 0},
	}
	for _, tc := range tests {
		if got := c.Text(tc.enc, tc.text); got != tc.want {
			t.Errorf("Text(%s, %q) = %d, want %d", tc.enc, tc.text, got, tc.want)
		}
	}
}

// TestSegmentingIsExact checks that cutting text at the segment boundaries
// gives the same count as tokenizing it whole, for texts whose lines are
// shorter than a segment.
func TestSegmentingIsExact(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	words := []string{"func", "main()", "{", "}", "  return", "err", "\t", "if", "x :=", "ERROR:", "пример", "漢字", "→", "1234567", "\"quoted\"", "--flag", "/path/to/file.go:12:3", "//", "}", "..."}
	c := New(Options{})
	for i := 0; i < 40; i++ {
		var b strings.Builder
		for b.Len() < 20000 {
			line := rng.Intn(12)
			for j := 0; j < line; j++ {
				b.WriteString(words[rng.Intn(len(words))])
				if rng.Intn(3) > 0 {
					b.WriteByte(' ')
				}
			}
			b.WriteString([]string{"\n", "\n\n", "\n  ", "\r\n"}[rng.Intn(4)])
		}
		s := b.String()
		for _, enc := range []string{O200kBase, CL100kBase} {
			want := countCodec(getEncoder(enc).lib, s)
			if got := c.Text(enc, s); got != want {
				t.Fatalf("case %d %s: segmented count %d, whole count %d", i, enc, got, want)
			}
		}
	}
}

func TestLongLinesStayClose(t *testing.T) {
	c := New(Options{})
	for _, s := range []string{strings.Repeat("a", 100000), strings.Repeat("word ", 20000), strings.Repeat("漢", 50000)} {
		want := countCodec(getEncoder(O200kBase).lib, s)
		got := c.Text(O200kBase, s)
		diff := got - want
		if diff < 0 {
			diff = -diff
		}
		if cuts := len(s)/maxSegment + 1; diff > cuts {
			t.Errorf("len %d: count %d, exact %d: off by more than one per cut (%d cuts)", len(s), got, want, cuts)
		}
	}
}

func TestCountCacheBounded(t *testing.T) {
	cc := newCountCache(100)
	for i := 0; i < 10000; i++ {
		cc.put(uint64(i), i)
	}
	if n := cc.len(); n > 100 {
		t.Fatalf("cache holds %d entries, bound 100", n)
	}
	if v, ok := cc.get(9999); !ok || v != 9999 {
		t.Fatal("newest entry missing")
	}
}

func TestConcurrentUse(t *testing.T) {
	c := New(Options{MessageCacheEntries: 64, SegmentCacheEntries: 64})
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < 50; i++ {
				item := fmt.Sprintf(`{"text":"%s %d"}`, strings.Repeat("x y ", 40), i%7)
				n, _ := c.Cached(O200kBase, "item", item, func() int { return c.Text(O200kBase, item) })
				if want := c.Text(O200kBase, item); n != want {
					t.Errorf("cached count %d, counted %d", n, want)
					return
				}
			}
		}(g)
	}
	wg.Wait()
}

func TestParallelEqualsSerial(t *testing.T) {
	c := New(Options{})
	rng := rand.New(rand.NewSource(3))
	var b strings.Builder
	for b.Len() < 3*parallelMin {
		fmt.Fprintf(&b, "line %d: value=%x ok\n", rng.Int(), rng.Int63())
	}
	s := b.String()
	cd := getEncoder(O200kBase)
	for _, w := range []int{2, 3, 7} {
		if got, want := c.parallelText(cd, O200kBase, s, w), c.serialText(cd, O200kBase, s); got != want {
			t.Errorf("%d workers: %d, serial %d", w, got, want)
		}
	}
}
