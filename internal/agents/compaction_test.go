package agents_test

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/condense-proxy/condense-proxy/codec/messages"
	"github.com/condense-proxy/condense-proxy/codec/responses"
	"github.com/condense-proxy/condense-proxy/internal/agents"
	"github.com/condense-proxy/condense-proxy/internal/fakeupstream"
	"github.com/condense-proxy/condense-proxy/internal/harness"
	"github.com/condense-proxy/condense-proxy/tokenizer"
	"github.com/condense-proxy/condense-proxy/view"
)

// compactingScript answers the agent's own compaction request (its last
// user message opens with the agent's summary instruction, as the codec
// sees it) with a summary naming where the script stands, so the agent
// resumes there from its new history; every other request goes to the
// script.
func compactingScript(e *e2e, codec view.Codec, answer func([]byte) fakeupstream.Reply) func([]byte) fakeupstream.Reply {
	return func(body []byte) fakeupstream.Reply {
		r, err := codec.Scan(body, func(string) string { return tokenizer.O200kBase })
		if err != nil || r.Compaction == "" {
			return answer(body)
		}
		step, _ := e.script.StepOf(e.format, body)
		return fakeupstream.Reply{Text: fmt.Sprintf("<analysis>The files are read one per step.</analysis>\n<summary>\n"+
			"1. Primary Request and Intent: read the files of the directory one by one as the tools direct, then report.\n"+
			"2. Current Work: %d files read so far. [script %s at step %d]\n</summary>", step, e.script.ID, step)}
	}
}

// checkCompaction asserts that the agent compacted itself at least once
// and that each of its compaction requests reached the strict fake with
// the SHA-256 of what the agent sent; then replays the first one, as the
// agent sent it, through proxies whose windows put it over the threshold
// (forwarded byte for byte) and over the window (digests only).
func checkCompaction(t *testing.T, e *e2e, codec view.Codec, res agents.Result, overThreshold bool) {
	t.Helper()
	if res.Err != nil {
		t.Errorf("agent did not exit 0: %v\nstdout:\n%s\nstderr:\n%s", res.Err, tail(res.Stdout), tail(res.Stderr))
	}
	if !strings.Contains(res.Stdout, e.script.Final) {
		t.Errorf("the agent did not finish after compacting (no %q in its output)", e.script.Final)
	}
	upstream := map[[32]byte]bool{}
	for _, r := range e.received() {
		upstream[sha256.Sum256(r.Body)] = true
	}
	compactions := 0
	for i, x := range e.front.Exchanges() {
		if x.Path != "/v1/"+e.format {
			continue
		}
		r, err := codec.Scan(x.Body, func(string) string { return tokenizer.O200kBase })
		if err != nil || r.Compaction == "" {
			continue
		}
		compactions++
		before, _ := strconv.Atoi(x.Response.Get("X-Condense-Tokens-Before"))
		t.Logf("exchange %d: %s compaction request, %d tokens (window %d, threshold %d), applied %q, degraded %q",
			i, r.Compaction, before, e.window, e.window*8/10, x.Response.Get("X-Condense-Applied"), x.Response.Get("X-Condense-Degraded"))
		if !upstream[sha256.Sum256(x.Body)] {
			t.Errorf("exchange %d: the agent's compaction request did not reach the upstream unchanged", i)
		}
		if a := x.Response.Get("X-Condense-Applied"); a != "none" {
			t.Errorf("exchange %d: compaction request applied %q", i, a)
		}
		if overThreshold && before <= e.window*8/10 {
			t.Errorf("exchange %d: the compaction request (%d tokens) is not over the proxy's threshold", i, before)
		}
	}
	if compactions == 0 {
		t.Fatal("the agent never compacted itself")
	}
	for _, x := range e.front.Exchanges() {
		if r, err := codec.Scan(x.Body, func(string) string { return tokenizer.O200kBase }); err == nil && r.Compaction != "" && x.Path == "/v1/"+e.format {
			replayCompaction(t, e.format, x, r.Total)
			break
		}
	}
}

// replayCompaction sends a real compaction request again through proxies
// in front of the strict fake: at a window it is over 80% of, it must be
// forwarded byte for byte; at a window it exceeds, condensed with digests
// only (every item kept, no summary, no marker) and accepted.
func replayCompaction(t *testing.T, format string, x agents.Exchange, tokens int) {
	for _, tc := range []struct {
		name    string
		percent int
	}{{"over the threshold", 110}, {"over the window", 70}} {
		t.Run("replay "+tc.name, func(t *testing.T) {
			window := tokens * tc.percent / 100
			st := harness.New(harness.Options{Window: window})
			defer st.Close()
			var received func() []fakeupstream.Received
			if format == "messages" {
				m := &fakeupstream.Messages{}
				st.SetUpstream(fakeupstream.Mux(st.Fake, m, nil))
				received = m.Received
			} else {
				r := &fakeupstream.Responses{}
				st.SetUpstream(fakeupstream.Mux(st.Fake, nil, r))
				received = r.Received
			}
			req, _ := http.NewRequest(http.MethodPost, st.Proxy.URL+x.Path+"?"+x.Query, bytes.NewReader(x.Body))
			req.Header = x.Header.Clone()
			req.Header.Del("Content-Length")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			got := received()
			if resp.StatusCode != http.StatusOK || len(got) != 1 || got[0].Status != http.StatusOK {
				t.Fatalf("status %d, upstream %+v", resp.StatusCode, got)
			}
			applied, degraded := resp.Header.Get("X-Condense-Applied"), resp.Header.Get("X-Condense-Degraded")
			t.Logf("window %d: %s tokens before, %s after, applied %q, degraded %q", window,
				resp.Header.Get("X-Condense-Tokens-Before"), resp.Header.Get("X-Condense-Tokens-After"), applied, degraded)
			if tc.percent > 100 {
				if sha256.Sum256(got[0].Body) != sha256.Sum256(x.Body) || applied != "none" || degraded != "" {
					t.Errorf("the compaction request was changed (applied %q)", applied)
				}
				return
			}
			fwd := string(got[0].Body)
			if applied != "selective" || !strings.Contains(degraded, "no summaries") ||
				strings.Contains(fwd, "conversation-summary") || strings.Contains(fwd, "were omitted here") {
				t.Errorf("over the window: applied %q, degraded %q", applied, degraded)
			}
		})
	}
}

// TestClaudeCodeCompactsItself runs Claude Code with its auto-compact
// window lowered (CLAUDE_CODE_AUTO_COMPACT_WINDOW, its smallest 100k, and
// CLAUDE_AUTOCOMPACT_PCT_OVERRIDE) so it compacts its own conversation
// during the scripted session; the proxy's window is set so the
// compaction request is over the proxy's threshold but inside its window:
// it must reach the strict Messages fake byte for byte.
func TestClaudeCodeCompactsItself(t *testing.T) {
	bin := agents.Require(t, agents.Claude)
	e := newE2E(t, "messages", claudeCompactWindow, withSteps(14), withFileSize(9000))
	codec := messages.New(tokenizer.New(tokenizer.Options{}))
	m := &fakeupstream.Messages{Answer: compactingScript(e, codec, e.script.Messages), Counter: tokenizer.New(tokenizer.Options{})}
	e.stack.SetUpstream(fakeupstream.Mux(e.stack.Fake, m, nil))
	e.received = m.Received
	res := e.run(func() agents.Result {
		return agents.Run(agentContext(t), agents.ClaudeCommand(agents.ClaudeOptions{
			Bin: bin, BaseURL: e.stack.Proxy.URL, Home: e.home(), Workdir: e.workdir(),
			Prompt: "Read the files of this directory one by one as the tools direct, then report.",
			Env:    []string{"CLAUDE_CODE_AUTO_COMPACT_WINDOW=100000", "CLAUDE_AUTOCOMPACT_PCT_OVERRIDE=70"},
		}))
	})
	checkCompaction(t, e, codec, res, false)
}

// claudeCompactWindow is the proxy's window in the live Claude Code run:
// Claude Code compacts at 70% of its 80k effective window (100k less 20k
// of output), and its compaction request is only about 1.2k tokens larger
// than the request before it, too narrow a gap to put the proxy's
// threshold between them reliably; so the live run's window is large and
// the replay (checkCompaction) puts the real request over the threshold
// and over the window.
const claudeCompactWindow = 200_000

// codexCompactLimit is Codex's model_auto_compact_token_limit in the
// test, and codexCompactWindow the proxy's window: Codex's requests before
// it compacts stay under the proxy's threshold (about 26k tokens), its
// compaction request (about 33k) is over it and inside the window.
const (
	codexCompactLimit  = 30_000
	codexCompactWindow = 38_000
)

// TestCodexCompactsItself runs Codex with model_auto_compact_token_limit
// low so it compacts its own conversation locally (a custom provider:
// its summarization prompt as the last user message); the request must
// reach the strict Responses fake byte for byte.
func TestCodexCompactsItself(t *testing.T) {
	bin := agents.Require(t, agents.Codex)
	e := newE2E(t, "responses", codexCompactWindow, withSteps(6))
	codec := responses.New(tokenizer.New(tokenizer.Options{}))
	r := &fakeupstream.Responses{Answer: compactingScript(e, codec, e.script.Responses), Counter: tokenizer.New(tokenizer.Options{})}
	e.stack.SetUpstream(fakeupstream.Mux(e.stack.Fake, nil, r))
	e.received = r.Received
	res := e.run(func() agents.Result {
		return agents.Run(agentContext(t), agents.CodexCommand(agents.CodexOptions{
			Bin: bin, BaseURL: e.stack.Proxy.URL + "/v1", Home: e.home(), Workdir: e.workdir(),
			Prompt: "Print the files of this directory one by one as the tools direct, then report.",
			Args:   []string{"-c", "model_auto_compact_token_limit=" + strconv.Itoa(codexCompactLimit)},
		}))
	})
	checkCompaction(t, e, codec, res, true)
}
