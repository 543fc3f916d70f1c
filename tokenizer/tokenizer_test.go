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
			want := countCodec(getCodec(enc), s)
			if got := c.Text(enc, s); got != want {
				t.Fatalf("case %d %s: segmented count %d, whole count %d", i, enc, got, want)
			}
		}
	}
}

func TestLongLinesStayClose(t *testing.T) {
	c := New(Options{})
	for _, s := range []string{strings.Repeat("a", 100000), strings.Repeat("word ", 20000), strings.Repeat("漢", 50000)} {
		want := countCodec(getCodec(O200kBase), s)
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

func TestRequestCount(t *testing.T) {
	c := New(Options{})
	hello := c.Text(O200kBase, "hello world")
	user := c.Text(O200kBase, "user")
	tests := []struct {
		name string
		body string
		want int
	}{
		{"one message", `{"model":"gpt-4o","messages":[{"role":"user","content":"hello world"}]}`, 3 + user + hello + 3},
		{"name adds one", `{"messages":[{"role":"user","name":"bob","content":"hello world"}]}`, 3 + user + hello + c.Text(O200kBase, "bob") + 1 + 3},
		{"text parts", `{"messages":[{"role":"user","content":[{"type":"text","text":"hello world"}]}]}`, 3 + user + hello + 3},
		{"image low", `{"messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:x","detail":"low"}}]}]}`, 3 + user + 85 + 3},
		{"image high", `{"messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"https://x/y.png"}}]}]}`, 3 + user + 765 + 3},
		{"null content", `{"messages":[{"role":"user","content":null}]}`, 3 + user + 3},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rc, err := c.Request(O200kBase, []byte(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			if rc.Total != tc.want {
				t.Errorf("Total = %d, want %d", rc.Total, tc.want)
			}
		})
	}
}

func TestRequestCountsToolsAndCalls(t *testing.T) {
	c := New(Options{})
	plain := `{"messages":[{"role":"user","content":"list files"}]}`
	withTools := `{"messages":[{"role":"user","content":"list files"}],"tools":[{"type":"function","function":{"name":"bash","description":"run a shell command","parameters":{"type":"object","properties":{"command":{"type":"string"}}}}}]}`
	withCall := `{"messages":[{"role":"user","content":"list files"},{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"bash","arguments":"{\"command\":\"ls -la /very/long/path\"}"}}]},{"role":"tool","tool_call_id":"c1","content":"a.go\nb.go"}]}`
	p, _ := c.Request(O200kBase, []byte(plain))
	tl, _ := c.Request(O200kBase, []byte(withTools))
	cl, _ := c.Request(O200kBase, []byte(withCall))
	if tl.Tools <= 10 || tl.Total != p.Total+tl.Tools {
		t.Errorf("tools counted %d, totals %d vs %d", tl.Tools, tl.Total, p.Total)
	}
	if len(cl.Messages) != 3 || cl.Messages[1] < c.Text(O200kBase, `{"command":"ls -la /very/long/path"}`) {
		t.Errorf("tool call arguments not counted: %v", cl.Messages)
	}
}

func TestRequestNotChat(t *testing.T) {
	c := New(Options{})
	for _, body := range []string{``, `not json`, `[]`, `{"model":"x"}`, `{"messages":"hi"}`, `{"messages":[1,2`} {
		if _, err := c.Request(O200kBase, []byte(body)); err != ErrNotChat {
			t.Errorf("Request(%q) err = %v, want ErrNotChat", body, err)
		}
	}
}

func TestMessageCacheHits(t *testing.T) {
	c := New(Options{})
	body := []byte(`{"messages":[{"role":"system","content":"be brief"},{"role":"user","content":"hello"}]}`)
	first, _ := c.Request(O200kBase, body)
	second, _ := c.Request(O200kBase, body)
	if first.CacheHits != 0 || second.CacheHits != 2 {
		t.Errorf("cache hits %d then %d, want 0 then 2", first.CacheHits, second.CacheHits)
	}
	if first.Total != second.Total {
		t.Errorf("cached total %d differs from %d", second.Total, first.Total)
	}
	// Another encoding must not reuse the o200k counts.
	third, _ := c.Request(CL100kBase, body)
	if third.CacheHits != 0 {
		t.Errorf("cl100k reused o200k cache entries")
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
				body := fmt.Sprintf(`{"messages":[{"role":"user","content":"%s %d"}]}`, strings.Repeat("x y ", 40), i%7)
				if _, err := c.Request(O200kBase, []byte(body)); err != nil {
					t.Error(err)
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
	cd := getCodec(O200kBase)
	for _, w := range []int{2, 3, 7} {
		if got, want := c.parallelText(cd, O200kBase, s, w), c.serialText(cd, O200kBase, s); got != want {
			t.Errorf("%d workers: %d, serial %d", w, got, want)
		}
	}
}
