package condense

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

	"github.com/condense-proxy/condense-proxy/selective"
)

var updateComposed = flag.Bool("update-composed", false, "rewrite testdata/composed.txt from what the engine forwards now")

// twoStage names the two-stage paths a report shows: digests, then a
// window over the digested conversation ("digests+window": a selective or
// auto request whose digests were not enough), and the newest steps'
// outputs digested before the window ("shrunk").
func twoStage(rep Report) []string {
	var paths []string
	digest, window := false, false
	for _, ch := range rep.Changes {
		switch ch.Kind {
		case ChangeDigest:
			digest = true
		case ChangeWindow, ChangeSummary:
			window = true
		}
	}
	if digest && window && rep.Applied != AppliedSelective {
		paths = append(paths, "digests+window")
	}
	if strings.Contains(rep.Degraded, "newest steps over budget") {
		paths = append(paths, "shrunk")
	}
	return paths
}

// composedGolden compares lines, a record of what an engine forwarded,
// with testdata/name (rewritten with -update-composed).
func composedGolden(t *testing.T, name string, lines []string) {
	t.Helper()
	got := []byte(strings.Join(lines, "\n") + "\n")
	path := filepath.Join("testdata", name)
	if *updateComposed {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test -run %s -update-composed writes it)", err, t.Name())
	}
	if !bytes.Equal(got, want) {
		g, w := strings.Split(string(got), "\n"), strings.Split(string(want), "\n")
		for i := range min(len(g), len(w)) {
			if g[i] != w[i] {
				t.Fatalf("%s: line %d forwarded differently:\n got  %s\n want %s", name, i+1, g[i], w[i])
			}
		}
		t.Fatalf("%s: %d lines, want %d", name, len(g), len(w))
	}
}

// TestTwoStageBodiesUnchanged replays growing chat completions and
// Responses sessions through the two-stage paths — digests then the
// window (selective and auto), the newest steps' outputs digested before
// the window (truncate, full, and inside selective's window) — and
// compares every forwarded body, byte for byte by its hash, with the
// bodies the engine forwarded when it windowed a digested copy of the
// request (testdata/composed.txt, recorded from that engine): the edits
// composed into one splice of the body as received forward the very same
// bytes. Every path is hit in every format.
func TestTwoStageBodiesUnchanged(t *testing.T) {
	var lines []string
	for _, f := range sessionForms(17, 260_000) {
		hits := map[string]int{}
		for _, o := range []struct {
			mode   string
			window int
			clear  bool
		}{
			{ModeSelective, 9000, true}, {ModeSelective, 16000, false}, {ModeAuto, 12000, true}, {ModeAuto, 20000, false},
			{ModeTruncate, 6000, false}, {ModeFull, 9000, true},
		} {
			e := newEngine(o.window, nil, Options{Summarizer: "extractive", SelectiveEnabled: true, ChunkTokens: 3000, SummaryBudgetTokens: 1500,
				KeepRecentTurns: 4, Selective: selective.Options{ClearToolInputs: o.clear}})
			for k := 0; k < f.turns; k += 2 {
				b, err := f.req(k)
				if err != nil {
					t.Fatal(err)
				}
				res, err := e.Condense(context.Background(), Request{Body: b, Codec: f.codec, Mode: o.mode, Scope: "s"})
				if err != nil {
					t.Fatal(err)
				}
				paths := twoStage(res.Report)
				for _, p := range paths {
					hits[p]++
				}
				lines = append(lines, fmt.Sprintf("%s %s %d %d: %x %s %d %s", f.name, o.mode, o.window, k,
					sha256.Sum256(res.Body), res.Report.Applied, res.Report.TokensAfter, strings.Join(paths, ",")))
			}
		}
		for _, p := range []string{"digests+window", "shrunk"} {
			if hits[p] == 0 {
				t.Errorf("%s: no request took the %s path: the test tests nothing there", f.name, p)
			}
		}
		t.Logf("%s: %v", f.name, hits)
	}
	composedGolden(t, "composed.txt", lines)
}
