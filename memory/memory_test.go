package memory

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/condense-proxy/condense-proxy/cache"
	"github.com/condense-proxy/condense-proxy/condense"
)

func step(id, text string, from int, refs ...string) condense.MemoryItem {
	return condense.MemoryItem{ID: id, Kind: condense.MemoryStep, Refs: refs, From: from, To: from + 1, Text: text}
}

func TestReplicasShareOneMemory(t *testing.T) {
	ctx := context.Background()
	store := cache.NewMemory(64 << 20)
	a, b := New(store, Options{}), New(store, Options{})

	a.Add(ctx, "s1", "c1", []condense.MemoryItem{step("x1", "the build failed with ErrQuotaExceeded", 3, "sumA")})
	// b has not read the conversation yet; its add takes the next slot.
	b.Add(ctx, "s1", "c1", []condense.MemoryItem{step("x2", "renamed pkg/store/cache.go to lru.go", 5, "win1")})
	// The same step under another ref: merged, not duplicated.
	a.Add(ctx, "s1", "c1", []condense.MemoryItem{step("x1", "the build failed with ErrQuotaExceeded", 3, "win1")})

	for name, m := range map[string]*Memory{"a": a, "b": b, "fresh": New(store, Options{})} {
		items := m.Items(ctx, "s1", "c1")
		if len(items) != 2 {
			t.Fatalf("%s: %d items, want 2: %+v", name, len(items), items)
		}
		if got := ids(m.Lookup(ctx, "s1", "c1", "win1")); got != "x1,x2" {
			t.Errorf("%s: lookup win1 = %s, want x1,x2", name, got)
		}
		if got := ids(m.Lookup(ctx, "s1", "c1", "sumA")); got != "x1" {
			t.Errorf("%s: lookup sumA = %s, want x1", name, got)
		}
	}
	if got := a.Items(ctx, "s2", "c1"); len(got) != 0 {
		t.Errorf("another scope sees %d items", len(got))
	}
}

func ids(items []condense.MemoryItem) string {
	var s []string
	for _, it := range items {
		s = append(s, it.ID)
	}
	return strings.Join(s, ",")
}

func TestBoundsPerConversation(t *testing.T) {
	ctx := context.Background()
	m := New(cache.NewMemory(64<<20), Options{MaxItems: 3, MaxBytes: 1000})
	for i := 0; i < 10; i++ {
		m.Add(ctx, "s", "c", []condense.MemoryItem{step(fmt.Sprint("i", i), strings.Repeat("w", 100), i)})
	}
	if n := len(New(m.store, Options{MaxItems: 3}).Items(ctx, "s", "c")); n != 3 {
		t.Errorf("items kept %d, want 3", n)
	}
	m2 := New(cache.NewMemory(64<<20), Options{MaxBytes: 250})
	for i := 0; i < 10; i++ {
		m2.Add(ctx, "s", "c", []condense.MemoryItem{step(fmt.Sprint("i", i), strings.Repeat("w", 100), i)})
	}
	if n := len(m2.Items(ctx, "s", "c")); n != 2 {
		t.Errorf("items kept under 250 bytes: %d, want 2", n)
	}
}

func TestTerms(t *testing.T) {
	got := strings.Join(terms("--- FAIL: TestParseDuration_Case17 in pkg/http/file3.go"), " ")
	for _, want := range []string{"testparseduration_case17", "case17", "parse", "duration", "file3", "fail"} {
		if !strings.Contains(" "+got+" ", " "+want+" ") {
			t.Errorf("terms %q lack %q", got, want)
		}
	}
}

func TestRecall(t *testing.T) {
	ctx := context.Background()
	m := New(cache.NewMemory(64<<20), Options{})
	m.Add(ctx, "s", "c", []condense.MemoryItem{
		step("aaaa1111", "[tool result]\n--- FAIL: TestQuota (0.01s)\n    quota_test.go:88: limit 42 exceeded", 4, "win9"),
		step("bbbb2222", "[assistant]\nI read the README; nothing about quotas there.", 6, "win9"),
		step("cccc3333", strings.Repeat("filler words about nothing in particular ", 2000), 8, "win9"),
	})
	cases := []struct {
		name, scope, args string
		outcome           string
		contains          string
	}{
		{"query finds the step", "s", `{"query":"TestQuota quota_test.go"}`, OutcomeFound, "limit 42 exceeded"},
		{"id of a step", "s", `{"id":"aaaa1111"}`, OutcomeFound, "limit 42 exceeded"},
		{"id of a marker lists its steps", "s", `{"id":"win9"}`, OutcomeFound, "nothing about quotas"},
		{"unknown id", "s", `{"id":"deadbeef"}`, OutcomeUnknown, "nothing under id deadbeef"},
		{"id of another caller", "other", `{"id":"aaaa1111"}`, OutcomeUnknown, "nothing under id aaaa1111"},
		{"query of another caller", "other", `{"query":"TestQuota"}`, OutcomeNone, "nothing in this conversation"},
		{"not an id", "s", `{"id":"../../etc/passwd"}`, OutcomeInvalid, "is not an id"},
		{"no arguments", "s", `{}`, OutcomeInvalid, "give `query`"},
		{"arguments not JSON", "s", `query=TestQuota`, OutcomeInvalid, "must be a JSON object"},
		{"query not a string", "s", `{"query":42}`, OutcomeInvalid, "as strings"},
		{"huge query is cut", "s", `{"query":"TestQuota ` + strings.Repeat("x", 100000) + `"}`, OutcomeFound, "cut to its first 1000 bytes"},
		{"nothing matches", "s", `{"query":"kubernetes helm chart"}`, OutcomeNone, "nothing in this conversation's condensed-away history matches"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := m.Recall(ctx, tc.scope, "c", tc.args, 1000, nil)
			if r.Outcome != tc.outcome || !strings.Contains(r.Answer, tc.contains) {
				t.Fatalf("outcome %s, answer %q; want %s containing %q", r.Outcome, clip(r.Answer, 400), tc.outcome, tc.contains)
			}
			if n := m.opts.Count(r.Answer); n > 1100 {
				t.Errorf("answer of %d tokens, over the budget", n)
			}
		})
	}
}

// TestOneCallerCannotEvictAnothersMemory: over a store bounded per scope
// (as the app builds it without Redis), a caller writing far more than
// the store holds pushes out its own slots, never another's. The slot
// keys follow cache's "kind:scope:rest" convention.
func TestOneCallerCannotEvictAnothersMemory(t *testing.T) {
	if got := cache.KindScope(slotKey("scopeA", "conv:1", 3)); got != "scopeA" {
		t.Fatalf("slot key's scope read as %q", got)
	}
	ctx := context.Background()
	store := cache.NewScopedMemory(256<<10, cache.KindScope)
	m := New(store, Options{MaxConversations: 1}) // the victim's record is read back from the store
	m.Add(ctx, "victim", "c", []condense.MemoryItem{step("v1", "the deploy key lives in vault path secret/ci/deploy", 2)})
	for i := range 100 {
		m.Add(ctx, "flood", fmt.Sprint("c", i), []condense.MemoryItem{step(fmt.Sprint("f", i), strings.Repeat("noise ", 2000), 2)})
	}
	if got := New(store, Options{}).Items(ctx, "flood", "c0"); len(got) != 0 {
		t.Fatal("the flood never filled the store: the test proves nothing")
	}
	if got := ids(m.Items(ctx, "victim", "c")); got != "v1" {
		t.Fatalf("victim's memory after another caller's flood: %q, want v1", got)
	}
}
