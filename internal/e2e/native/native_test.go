// Package native_test replays the shared corpus in its native wire forms
// (Anthropic Messages, OpenAI Responses) through the proxy: the Proof of the
// Messages and Responses issues. A package of its own, so that its replays
// have their own test-binary time budget beside internal/e2e's.
package native_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/condense-proxy/condense-proxy/internal/corpus"
	"github.com/condense-proxy/condense-proxy/internal/fakeupstream"
	"github.com/condense-proxy/condense-proxy/internal/harness"
	"github.com/condense-proxy/condense-proxy/internal/replay"
	"github.com/condense-proxy/condense-proxy/internal/testenv"
)

// corpusFiles lists the shared corpus's sessions; it skips the test when
// the folder is absent, or fails it under CI=true.
func corpusFiles(t *testing.T) []string {
	t.Helper()
	dir := filepath.Join("..", "..", "..", "..", "shared", "corpus", "raw")
	if _, err := os.Stat(dir); err != nil {
		if testenv.InCI() {
			t.Fatalf("in CI and the shared corpus is absent: %v", err)
		}
		t.Skip("shared corpus absent")
	}
	files, err := corpus.Files(dir)
	if err != nil || len(files) == 0 {
		t.Fatalf("shared corpus: %d files, %v", len(files), err)
	}
	return files
}

// nativeWindow is small enough that most corpus sessions must condense.
const nativeWindow = 32000

// nativeEvery samples the turns of the native replays (each request is
// the whole history, so a full replay of the corpus in every mode moves
// gigabytes and takes minutes under -race); the last turn is always sent.
// Auto replays every turn of the sessions of at most nativeFullTurns
// turns: prefix stability is measured between consecutive requests, so it
// is checked on those replays only. Under -race, where condensing a
// session's largest (last) requests from cold takes seconds each, only the
// first nativeMaxTurns turns of a session are replayed (0: all).
var nativeEvery, nativeFullTurns, nativeMaxTurns = func() (int, int, int) {
	if raceOn {
		return 10, 60, 60
	}
	return 10, 100, 0
}()

// firstTurns is a session cut after its first n turns.
type firstTurns struct {
	replay.NativeSession
	n int
}

func (f firstTurns) Turns() int { return min(f.n, f.NativeSession.Turns()) }

// capped returns s, or its first nativeMaxTurns turns.
func capped(s replay.NativeSession) replay.NativeSession {
	if nativeMaxTurns > 0 {
		return firstTurns{s, nativeMaxTurns}
	}
	return s
}

// everyTurn reports whether a replay sends every turn.
func everyTurn(s replay.NativeSession, mode string) bool {
	return mode == "auto" && s.Turns() <= nativeFullTurns
}

func nativeReplay(t *testing.T, name, format string, s replay.NativeSession, mode string) *replay.Result {
	every := nativeEvery
	if everyTurn(s, mode) {
		every = 1
	}
	st := harness.New(harness.Options{Window: nativeWindow, Summarizer: "extractive"})
	defer st.Close()
	up := replay.Upstream{Chat: st.Fake, Messages: &fakeupstream.Messages{Counter: st.Counter}, Responses: &fakeupstream.Responses{Counter: st.Counter}}
	st.SetUpstream(fakeupstream.Mux(st.Fake, up.Messages, up.Responses))
	res, err := replay.RunNative(context.Background(), name, format, s, up, st.Counter, replay.Options{
		ProxyURL: st.Proxy.URL, Mode: mode, APIKey: "sk-native", Window: nativeWindow, Every: every, Drain: st.Drain,
	})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// checkNative asserts the Proof of the Messages and Responses issues: 0
// rejected, head and last item verbatim, prefix stability ≥ 0.9 when
// condensed (when every turn was replayed), count_tokens within 10% of what was forwarded (the proxy's
// tokenizer and the fake's approximate count differ), nothing over the
// window.
func checkNative(t *testing.T, res *replay.Result, all bool) {
	t.Helper()
	condensed := 0
	for i, r := range res.Requests {
		if !r.HeadVerbatim || !r.LastVerbatim {
			t.Errorf("%s %s request %d: head verbatim %v, last verbatim %v", res.Format, res.Mode, i, r.HeadVerbatim, r.LastVerbatim)
		}
		if r.Applied != "" && r.Applied != "none" {
			condensed++
		}
	}
	if res.Rejected != 0 {
		t.Errorf("%s %s: %d requests rejected by the strict upstream", res.Format, res.Mode, res.Rejected)
	}
	if all && condensed > 0 && res.PrefixStability < 0.9 {
		t.Errorf("%s %s: prefix stability %.3f < 0.9", res.Format, res.Mode, res.PrefixStability)
	}
	if res.Format == replay.FormatMessages && res.CountTokensMaxDiff > 0.1 {
		t.Errorf("%s %s: count_tokens answers differ from the forwarded count by up to %.0f%% (%d of %d differ)",
			res.Format, res.Mode, 100*res.CountTokensMaxDiff, res.CountTokensOff, res.CountTokensChecked)
	}
	if res.MaxForwarded > nativeWindow {
		t.Errorf("%s %s: forwarded %d tokens, window %d (%d of %d requests condensed)", res.Format, res.Mode, res.MaxForwarded, nativeWindow, condensed, len(res.Requests))
	}
	t.Logf("%s %s: %d requests, %d condensed, max fwd %d, prefix stability %.3f, count_tokens off %d/%d",
		res.Format, res.Mode, len(res.Requests), condensed, res.MaxForwarded, res.PrefixStability, res.CountTokensOff, res.CountTokensChecked)
}

var nativeModes = []string{"auto", "full", "selective", "truncate"}

// TestReplayNativeMessages replays the shared corpus's Claude Code sessions
// in their native Messages form, thinking blocks and all, in every mode.
func TestReplayNativeMessages(t *testing.T) {
	if testenv.Unraced(t) {
		return // a sequential replay: its verdict, without the race detector
	}
	for _, f := range corpusFiles(t) {
		if !strings.HasSuffix(f, ".jsonl") {
			continue
		}
		s, err := corpus.LoadMessages(f)
		if err != nil {
			t.Fatal(err)
		}
		t.Run(s.Name, func(t *testing.T) {
			for _, mode := range nativeModes {
				checkNative(t, nativeReplay(t, s.Name, replay.FormatMessages, capped(s), mode), everyTurn(capped(s), mode))
			}
		})
	}
}

// TestReplayNativeResponses replays every shared-corpus session in
// Responses form, in every mode.
func TestReplayNativeResponses(t *testing.T) {
	if testenv.Unraced(t) {
		return // a sequential replay: its verdict, without the race detector
	}
	for _, f := range corpusFiles(t) {
		chat, err := corpus.Load(f)
		if err != nil {
			t.Fatal(err)
		}
		s := corpus.Responses(chat)
		t.Run(s.Name, func(t *testing.T) {
			for _, mode := range nativeModes {
				checkNative(t, nativeReplay(t, s.Name, replay.FormatResponses, capped(s), mode), everyTurn(capped(s), mode))
			}
		})
	}
}
