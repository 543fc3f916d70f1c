package messages

import (
	"bytes"
	"context"
	"crypto/sha256"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/condense-proxy/condense-proxy/condense"
	"github.com/condense-proxy/condense-proxy/selective"
)

var updateComposed = flag.Bool("update-composed", false, "rewrite testdata/composed.txt from what the engine forwards now")

// twoStage names the two-stage paths a report shows: digests, then a
// window over the digested conversation ("digests+window"), and the
// newest steps' outputs digested before the window ("shrunk").
func twoStage(rep condense.Report) []string {
	var paths []string
	digest, window := false, false
	for _, ch := range rep.Changes {
		switch ch.Kind {
		case condense.ChangeDigest:
			digest = true
		case condense.ChangeWindow, condense.ChangeSummary:
			window = true
		}
	}
	if digest && window && rep.Applied != condense.AppliedSelective {
		paths = append(paths, "digests+window")
	}
	if strings.Contains(rep.Degraded, "newest steps over budget") {
		paths = append(paths, "shrunk")
	}
	return paths
}

// TestTwoStageBodiesUnchanged: condense's test of the same name, for
// Messages requests (with thinking, cache markers, tool_result turns):
// every body forwarded through the two-stage paths — digests then the
// window, the newest steps' outputs digested before the window — is the
// body recorded in testdata/composed.txt from the engine that windowed a
// digested copy of the request, byte for byte (by its hash), headers
// included.
func TestTwoStageBodiesUnchanged(t *testing.T) {
	var lines []string
	hits := map[string]int{}
	for _, thinking := range []bool{true, false} {
		msgs := claudeSession(23, 80, thinking)
		for _, o := range []struct {
			mode   string
			window int
			clear  bool
		}{
			{condense.ModeSelective, 9000, true}, {condense.ModeSelective, 16000, false}, {condense.ModeAuto, 12000, true},
			{condense.ModeTruncate, 6000, false}, {condense.ModeFull, 9000, true},
		} {
			e, c := newEngine(o.window, condense.Options{SelectiveEnabled: true, ChunkTokens: 3000, SummaryBudgetTokens: 1500,
				KeepRecentTurns: 4, Selective: selective.Options{ClearToolInputs: o.clear}})
			for k := 3; k <= len(msgs); k += 4 {
				b := body(msgs[:k], "claude-fable-4", thinking)
				res, err := e.Condense(context.Background(), condense.Request{Body: b, Codec: c, Mode: o.mode, Scope: "s"})
				if err != nil {
					t.Fatal(err)
				}
				paths := twoStage(res.Report)
				for _, p := range paths {
					hits[p]++
				}
				lines = append(lines, fmt.Sprintf("thinking=%v %s %d %d: %x %s %d %v %s", thinking, o.mode, o.window, k,
					sha256.Sum256(res.Body), res.Report.Applied, res.Report.TokensAfter, res.Headers, strings.Join(paths, ",")))
			}
		}
	}
	for _, p := range []string{"digests+window", "shrunk"} {
		if hits[p] == 0 {
			t.Errorf("no request took the %s path: the test tests nothing there", p)
		}
	}
	t.Logf("%v", hits)
	got := []byte(strings.Join(lines, "\n") + "\n")
	path := filepath.Join("testdata", "composed.txt")
	if *updateComposed {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test -run TestTwoStageBodiesUnchanged -update-composed writes it)", err)
	}
	if !bytes.Equal(got, want) {
		g, w := strings.Split(string(got), "\n"), strings.Split(string(want), "\n")
		for i := range min(len(g), len(w)) {
			if g[i] != w[i] {
				t.Fatalf("line %d forwarded differently:\n got  %s\n want %s", i+1, g[i], w[i])
			}
		}
		t.Fatalf("%d lines, want %d", len(g), len(w))
	}
}
