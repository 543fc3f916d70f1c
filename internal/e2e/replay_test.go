package e2e_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/condense-proxy/condense-proxy/internal/corpus"
	"github.com/condense-proxy/condense-proxy/internal/harness"
	"github.com/condense-proxy/condense-proxy/internal/replay"
	"github.com/condense-proxy/condense-proxy/internal/testenv"
	"github.com/condense-proxy/condense-proxy/proxy"
)

// stack is a harness.Stack with the helpers these tests share.
type stack struct{ *harness.Stack }

type stackOptions struct {
	summaryTimeout time.Duration
	recorder       proxy.Recorder // the proxy's, for the reports; nil: none
}

func newStack(t testing.TB, window int, summarizer string, opts ...func(*stackOptions)) *stack {
	so := stackOptions{}
	for _, o := range opts {
		o(&so)
	}
	s := harness.New(harness.Options{Window: window, Summarizer: summarizer, SummaryTimeout: so.summaryTimeout, Recorder: so.recorder})
	t.Cleanup(s.Close)
	return &stack{s}
}

func (s *stack) replay(t testing.TB, sess *corpus.Session, mode string, every int, facts ...corpus.Fact) *replay.Result {
	t.Helper()
	return s.replayModel(t, sess, "gpt-4o", mode, every, facts...)
}

// replayModel replays sess as requests of model.
func (s *stack) replayModel(t testing.TB, sess *corpus.Session, model, mode string, every int, facts ...corpus.Fact) *replay.Result {
	t.Helper()
	res, err := replay.Run(context.Background(), sess, s.Fake, s.Counter, replay.Options{
		ProxyURL: s.Proxy.URL, Model: model, Mode: mode, APIKey: "sk-replay", Window: 128000, Every: every, Facts: facts,
		Drain: s.Drain,
	})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func checkReplay(t *testing.T, res *replay.Result, window int) {
	t.Helper()
	condensed := 0
	for i, r := range res.Requests {
		if !r.HeadVerbatim || !r.LastVerbatim {
			t.Errorf("%s request %d: head verbatim %v, last verbatim %v", res.Session, i, r.HeadVerbatim, r.LastVerbatim)
		}
		if r.Applied != "none" {
			condensed++
		}
	}
	if res.Rejected != 0 {
		t.Errorf("%s: %d requests rejected by the strict upstream", res.Session, res.Rejected)
	}
	if res.MaxForwarded > window {
		t.Errorf("%s: forwarded %d tokens, window %d", res.Session, res.MaxForwarded, window)
	}
	if float64(res.SummarizerTokensIn) > 1.5*float64(res.ContentTokens) {
		t.Errorf("%s: summarizer read %d tokens for %d tokens of content (> 1.5x)", res.Session, res.SummarizerTokensIn, res.ContentTokens)
	}
	if condensed > 0 && res.PrefixStability < 0.9 {
		t.Errorf("%s: prefix stability %.3f < 0.9", res.Session, res.PrefixStability)
	}
	t.Logf("%s: %d requests, %d condensed, max fwd %d, summarizer calls %d (%d tokens in, content %d), prefix stability %.3f",
		res.Session, len(res.Requests), condensed, res.MaxForwarded, res.SummarizerCalls, res.SummarizerTokensIn, res.ContentTokens, res.PrefixStability)
}

// TestReplaySyntheticLongSessions replays long synthetic sessions (300k+
// tokens) turn by turn at a 128k window with the canned LLM summarizer.
func TestReplaySyntheticLongSessions(t *testing.T) {
	if testenv.Unraced(t) {
		return // a sequential replay: its verdict, without the race detector
	}
	for _, seed := range []int64{1, 2} {
		sess, _ := corpus.Synthetic(seed, 1_300_000)
		s := newStack(t, 128000, "llm")
		res := s.replay(t, sess, "full", 1)
		if res.ContentTokens < 300000 {
			t.Fatalf("synthetic session has only %d tokens", res.ContentTokens)
		}
		checkReplay(t, res, 128000)
	}
}

// corpusFiles lists the shared corpus's sessions; it skips the test when
// the folder is absent, or fails it under CI=true.
func corpusFiles(t *testing.T) []string {
	t.Helper()
	dir := filepath.Join("..", "..", "..", "shared", "corpus", "raw")
	if _, err := os.Stat(dir); err != nil {
		if testenv.InCI() {
			t.Fatalf("in CI and the shared corpus is absent: %v", err)
		}
		t.Skip("shared corpus absent")
	}
	files, err := corpus.Files(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("shared corpus folder holds no session")
	}
	return files
}

// TestReplayCorpus replays every session of the shared corpus.
func TestReplayCorpus(t *testing.T) {
	if testenv.Unraced(t) {
		return // a sequential replay: its verdict, without the race detector
	}
	files := corpusFiles(t)
	for _, f := range files {
		sess, err := corpus.Load(f)
		if err != nil {
			t.Fatal(err)
		}
		s := newStack(t, 128000, "llm")
		checkReplay(t, s.replay(t, sess, "full", 1), 128000)
	}
}

// TestReplaySelective replays long synthetic sessions in selective mode:
// no rejection, every request within the window, the prefix stable, and
// the planted facts that lie in digested outputs kept.
func TestReplaySelective(t *testing.T) {
	if testenv.Unraced(t) {
		return // a sequential replay: its verdict, without the race detector
	}
	for _, seed := range []int64{3, 4} {
		sess, facts := corpus.Synthetic(seed, 600_000)
		s := newStack(t, 128000, "llm")
		res := s.replay(t, sess, "selective", 1, facts...)
		checkReplay(t, res, 128000)
		if res.PrefixStability < 0.95 {
			t.Errorf("%s: prefix stability %.3f < 0.95", res.Session, res.PrefixStability)
		}
		if res.FactsSeen == 0 || res.FactRetention() < 0.95 {
			t.Errorf("%s: kept %d of %d planted facts; lost e.g. %q", res.Session, res.FactsKept, res.FactsSeen, res.Lost)
		}
		selective := 0
		for _, r := range res.Requests {
			if r.Applied == "selective" {
				selective++
			}
		}
		if selective == 0 {
			t.Errorf("%s: selective condensing never applied", res.Session)
		}
		t.Logf("%s: selective on %d requests, facts kept %d/%d", res.Session, selective, res.FactsKept, res.FactsSeen)
	}
}

// TestReplayAuto: auto mode on a session long enough to need both of its
// parts. Priced as Anthropic bills (a bust costs 1.25, a read 0.1), auto
// digests first and cuts when digests are not enough, keeping the planted
// facts the digests keep. One long replay through the proxy with its
// background jobs, under the race detector.
func TestReplayAuto(t *testing.T) {
	res, first, modes := replayAuto(t, "claude-sonnet-4-5")
	if first != "selective" || modes["full"] == 0 {
		t.Errorf("auto applied %v, first %s: want digests first, then the cut", modes, first)
	}
	if res.FactRetention() < 0.95 {
		t.Errorf("digests first kept %d of %d planted facts", res.FactsKept, res.FactsSeen)
	}
}

// TestReplayAutoFoldsOnce: the same session priced as OpenAI bills (a bust
// costs 1.0, a read 0.5: reads dear, busts cheap). The cost model prices a
// fold below the digests at the first condensation: auto folds once, and
// from the fold's next move takes the cut — every condensed request full,
// and fewer facts kept, the price of reading less (BENCHMARKS.md).
func TestReplayAutoFoldsOnce(t *testing.T) {
	if testenv.Unraced(t) {
		return // a sequential replay: its verdict, without the race detector
	}
	_, first, modes := replayAuto(t, "gpt-4o")
	if first != "full" || modes["selective"] > 0 {
		t.Errorf("auto applied %v, first %s: want its one fold, then the cut", modes, first)
	}
}

// replayAuto replays a 10× synthetic session as model in auto mode and
// returns the result, what its first condensed request applied, and how
// many requests applied what.
func replayAuto(t *testing.T, model string) (*replay.Result, string, map[string]int) {
	sess, facts := corpus.Synthetic(5, 1_300_000)
	s := newStack(t, 128000, "llm")
	res := s.replayModel(t, sess, model, "auto", 1, facts...)
	checkReplay(t, res, 128000)
	modes := map[string]int{}
	first := ""
	for _, r := range res.Requests {
		modes[r.Applied]++
		if first == "" && r.Applied != "none" {
			first = r.Applied
		}
	}
	t.Logf("%s: auto %v, facts kept %d/%d, stability %.3f", model, modes, res.FactsKept, res.FactsSeen, res.PrefixStability)
	return res, first, modes
}

// TestReplayCorpusSelective replays the shared corpus in selective mode at
// a 32k window (so most sessions condense) and checks the facts detectable
// in real sessions (error lines in tool outputs, paths in tool calls, the
// task) survive.
func TestReplayCorpusSelective(t *testing.T) {
	if testenv.Unraced(t) {
		return // a sequential replay: its verdict, without the race detector
	}
	files := corpusFiles(t)
	seen, kept := 0, 0
	for _, f := range files {
		sess, err := corpus.Load(f)
		if err != nil {
			t.Fatal(err)
		}
		s := newStack(t, 32000, "llm")
		res, err := replay.Run(context.Background(), sess, s.Fake, s.Counter, replay.Options{
			ProxyURL: s.Proxy.URL, Model: "gpt-4o", Mode: "selective", APIKey: "sk-replay", Window: 32000, Every: 3,
			Facts: corpus.DetectFacts(sess),
		})
		if err != nil {
			t.Fatal(err)
		}
		if res.Rejected != 0 {
			t.Errorf("%s: %d rejected", res.Session, res.Rejected)
		}
		// Only requests condensed selectively count: a request that also
		// needed the sliding window loses whole messages by design.
		sel := res.FactsByApplied["selective"]
		seen += sel[0]
		kept += sel[1]
		t.Logf("%s: selective requests kept %d/%d facts; all condensed requests %v", res.Session, sel[1], sel[0], res.FactsByApplied)
	}
	if seen == 0 || float64(kept) < 0.95*float64(seen) {
		t.Errorf("corpus facts kept %d of %d in selectively condensed requests (< 95%%)", kept, seen)
	}
}
