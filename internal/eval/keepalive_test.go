package eval

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/condense-proxy/condense-proxy/internal/corpus"
	"github.com/condense-proxy/condense-proxy/internal/replay"
)

// TestKeepAliveSaving: a gap the pings bridge saves the re-write less
// their price; one they do not bridge costs the pings; one shorter than
// the cache's life costs nothing either way.
func TestKeepAliveSaving(t *testing.T) {
	const prompt = 100000
	reqs := []replay.Request{{FwdCounted: prompt}, {FwdCounted: prompt + 1000, CachedTokens: prompt}}
	idle := []bool{false, true}
	p := Pricings[0]
	base := p.requestBill(prompt, 0) + p.requestBill(prompt+1000, prompt)
	rewrite := p.requestBill(prompt, 0) + p.Fresh*(prompt+1000)
	ping := p.Cached*prompt + p.SummaryOut
	cases := []struct {
		name string
		gap  time.Duration
		want float64
	}{
		{"within the cache's life", 2 * time.Minute, 0},
		{"bridged by one ping", 7 * time.Minute, (rewrite - (base + ping)) / rewrite},
		{"bridged by two pings", 12 * time.Minute, (rewrite - (base + 2*ping)) / rewrite},
		{"longer than the pings keep it", 30 * time.Minute, -2 * ping / rewrite},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			gaps, got := keepAliveSaving(reqs, idle, p, func() time.Duration { return tc.gap })
			if gaps != 1 || got < tc.want-1e-9 || got > tc.want+1e-9 {
				t.Errorf("%d gaps, saving %.4f, want 1 and %.4f", gaps, got, tc.want)
			}
		})
	}
	// OpenAI-style prices: a read at half the price never pays for the
	// re-write it saves, so nothing is pinged.
	if _, got := keepAliveSaving(reqs, idle, Pricings[1], func() time.Duration { return 7 * time.Minute }); got != 0 {
		t.Errorf("OpenAI-style prices: saving %.4f, want 0 (no ping)", got)
	}
}

// TestKeepAliveRow: a Claude Code session replayed in chat form has idle
// gaps, and the evaluation reports keep-alive's saving on it.
func TestKeepAliveRow(t *testing.T) {
	f := filepath.Join("..", "..", "..", "shared", "corpus", "raw", "claude-code", "d7d349f9-c243-46e2-9a32-4a0eddfc634b.jsonl")
	if _, err := os.Stat(f); err != nil {
		if v := strings.ToLower(os.Getenv("CI")); v == "true" || v == "1" {
			t.Fatalf("CI=true and the shared corpus is absent: %v", err)
		}
		t.Skip("shared corpus absent")
	}
	s, err := corpus.Load(f)
	if err != nil {
		t.Fatal(err)
	}
	idle := 0
	for _, v := range idleBefore(s, 1) {
		if v {
			idle++
		}
	}
	rep, err := Run(context.Background(), Config{Sources: []Source{{Spec: f, Window: 200000}}, Modes: Modes[:1]})
	if err != nil {
		t.Fatal(err)
	}
	row := rep.Rows[0]
	if idle == 0 || row.IdleGaps != idle || row.KeepAliveSaving == 0 || row.KeepAliveSaving == -1 {
		t.Fatalf("%d idle points; row: %d gaps, saving %.4f", idle, row.IdleGaps, row.KeepAliveSaving)
	}
	if md := rep.Markdown("eval", "go test"); !strings.Contains(md, "## Keep-alive over idle gaps") || !strings.Contains(md, row.Session) {
		t.Error("the report has no keep-alive row")
	}
	t.Logf("%s: %d idle gaps, keep-alive net saving %+.1f%%", row.Session, row.IdleGaps, 100*row.KeepAliveSaving)
}
