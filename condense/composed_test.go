package condense

import (
	"context"
	"flag"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/condense-proxy/condense-proxy/internal/goldenview"
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
	if rep.DegradedBy(DegradedNewestOverBudget) {
		paths = append(paths, "shrunk")
	}
	return paths
}

// composedHeader opens testdata/composed.txt.
const composedHeader = `What the engine forwards on the two-stage paths (TestTwoStageBodiesUnchanged, condense).
A line: format mode window turn: applied tokens-after paths | hash of the body | its items.
Format: docs/testing.md, Goldens. Rewritten by go test ./condense/ -run TestTwoStageBodiesUnchanged -update-composed`

// TestTwoStageBodiesUnchanged replays growing chat completions and
// Responses sessions through the two-stage paths — digests then the
// window (selective and auto), the newest steps' outputs digested before
// the window (truncate, full, and inside selective's window) — and
// compares every forwarded body, byte for byte by its hash (and its items
// and new texts, shown for a reviewer: internal/goldenview), with the
// bodies the engine forwarded when it windowed a digested copy of the
// request (testdata/composed.txt, recorded from that engine): the edits
// composed into one splice of the body as received forward the very same
// bytes. Every path is hit in every format.
func TestTwoStageBodiesUnchanged(t *testing.T) {
	book := goldenview.NewBook()
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
				book.Add(fmt.Sprintf("%s %s %d %d: %s | %s", f.name, o.mode, o.window, k,
					strings.Join(append([]string{res.Report.Applied, strconv.Itoa(res.Report.TokensAfter)}, paths...), " "),
					book.Render(f.codec, b, res.Body)))
			}
		}
		for _, p := range []string{"digests+window", "shrunk"} {
			if hits[p] == 0 {
				t.Errorf("%s: no request took the %s path: the test tests nothing there", f.name, p)
			}
		}
		t.Logf("%s: %v", f.name, hits)
	}
	goldenview.Check(t, filepath.Join("testdata", "composed.txt"), book.Bytes(composedHeader), *updateComposed,
		"go test ./condense/ -run TestTwoStageBodiesUnchanged -update-composed")
}
