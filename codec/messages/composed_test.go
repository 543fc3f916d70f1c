package messages

import (
	"context"
	"flag"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/condense-proxy/condense-proxy/condense"
	"github.com/condense-proxy/condense-proxy/internal/goldenview"
	"github.com/condense-proxy/condense-proxy/selective"
)

var updateComposed = flag.Bool("update-composed", false, "rewrite testdata/composed.txt from what the engine forwards now")

// composedHeader opens testdata/composed.txt.
const composedHeader = `What the engine forwards on the two-stage paths (TestTwoStageBodiesUnchanged, codec/messages).
A line: thinking mode window messages: applied tokens-after headers paths | hash of the body | its items.
Format: docs/testing.md, Goldens. Rewritten by go test ./codec/messages/ -run TestTwoStageBodiesUnchanged -update-composed`

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
	if rep.DegradedBy(condense.DegradedNewestOverBudget) {
		paths = append(paths, "shrunk")
	}
	return paths
}

// TestTwoStageBodiesUnchanged: condense's test of the same name, for
// Messages requests (with thinking, cache markers, tool_result turns):
// every body forwarded through the two-stage paths — digests then the
// window, the newest steps' outputs digested before the window — is the
// body recorded in testdata/composed.txt from the engine that windowed a
// digested copy of the request, byte for byte (by its hash; its items and
// new texts shown for a reviewer: internal/goldenview), headers included.
func TestTwoStageBodiesUnchanged(t *testing.T) {
	book := goldenview.NewBook()
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
				book.Add(fmt.Sprintf("thinking=%v %s %d %d: %s | %s", thinking, o.mode, o.window, k,
					strings.Join(append([]string{res.Report.Applied, strconv.Itoa(res.Report.TokensAfter), fmt.Sprint(res.Headers)}, paths...), " "),
					book.Render(c, b, res.Body)))
			}
		}
	}
	for _, p := range []string{"digests+window", "shrunk"} {
		if hits[p] == 0 {
			t.Errorf("no request took the %s path: the test tests nothing there", p)
		}
	}
	t.Logf("%v", hits)
	goldenview.Check(t, filepath.Join("testdata", "composed.txt"), book.Bytes(composedHeader), *updateComposed,
		"go test ./codec/messages/ -run TestTwoStageBodiesUnchanged -update-composed")
}
