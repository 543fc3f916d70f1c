package messages

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/condense-proxy/condense-proxy/cache"
	"github.com/condense-proxy/condense-proxy/condense"
	"github.com/condense-proxy/condense-proxy/internal/fakeupstream"
	"github.com/condense-proxy/condense-proxy/internal/testenv"
	"github.com/condense-proxy/condense-proxy/selective"
	"github.com/condense-proxy/condense-proxy/tokenizer"
)

// newEngine returns the real engine with the Messages codec, extractive
// summaries and a memory cache, for a model of the given window.
func newEngine(window int, o condense.Options) (*condense.Engine, *Codec) {
	c := New(sharedCounter, fable)
	if o.Summarizer == "" {
		o.Summarizer = "extractive"
	}
	e := condense.New(condense.Deps{
		Counter: sharedCounter,
		Models: condense.ModelsFunc(func(string) condense.ModelLimits {
			return condense.ModelLimits{Window: window, Threshold: 0.8, Encoding: tokenizer.O200kBase, SafetyFactor: 1}
		}),
		Cache: cache.NewMemory(256 << 20),
	}, o)
	return e, c
}

// TestCondensedSessionsAreValid runs long Claude Code-like sessions, with
// and without thinking, through the real engine in every mode, request by
// request as the session grows, and checks every condensed request: the
// strict Messages validator accepts it (pairing, tool_result first,
// thinking signatures, the last assistant turn's thinking first, at most 4
// markers in order); system, tools, thinking, metadata and
// context_management byte for byte; head and last message verbatim; no
// marker added or moved in what is kept; never larger than received;
// within the window.
func TestCondensedSessionsAreValid(t *testing.T) {
	if testenv.Unraced(t) {
		return // a sequential replay: its verdict, without the race detector
	}
	const window = 40000
	modes := []string{condense.ModeFull, condense.ModeSelective, condense.ModeAuto, condense.ModeTruncate}
	for _, thinking := range []bool{true, false} {
		msgs := claudeSession(11, 90, thinking)
		for _, mode := range modes {
			t.Run(fmt.Sprintf("thinking=%v/%s", thinking, mode), func(t *testing.T) {
				e, c := newEngine(window, condense.Options{SelectiveEnabled: true, ChunkTokens: 5000, SummaryBudgetTokens: 3000,
					Selective: selective.Options{ClearToolInputs: true}})
				condensed := 0
				for k := 3; k <= len(msgs); k += 2 {
					b := body(msgs[:k], "claude-sonnet-4-5", thinking)
					res, err := e.Condense(context.Background(), condense.Request{Body: b, Codec: c, Mode: mode, Scope: "test"})
					if err != nil {
						t.Fatal(err)
					}
					rep := res.Report
					if !rep.Counted || rep.Format != Format {
						t.Fatalf("not counted: %+v", rep)
					}
					if rep.TokensAfter > rep.TokensBefore || len(res.Body) > len(b) {
						t.Fatalf("%d messages: forwarded %d tokens / %d bytes for %d / %d", k, rep.TokensAfter, len(res.Body), rep.TokensBefore, len(b))
					}
					if rep.TokensBefore <= rep.Trigger {
						if !bytes.Equal(res.Body, b) {
							t.Fatalf("%d messages: under the threshold but changed", k)
						}
						continue
					}
					if rep.Applied == condense.AppliedNone {
						t.Fatalf("%d messages: over the threshold, not condensed: %s", k, rep.Reason)
					}
					condensed++
					if rep.TokensAfter > window {
						t.Fatalf("%d messages: %d tokens forwarded, over the window", k, rep.TokensAfter)
					}
					if err := fakeupstream.ValidateMessages(res.Body, fakeupstream.DefaultSigner, false); err != nil {
						t.Fatalf("%d messages, %s: the API would refuse it: %s", k, rep.Applied, err.Message)
					}
					for _, f := range []string{"system", "tools", "thinking", "metadata", "context_management", "model", "max_tokens", "stream"} {
						if gjson.GetBytes(res.Body, f).Raw != gjson.GetBytes(b, f).Raw {
							t.Fatalf("%d messages: %s changed", k, f)
						}
					}
					in := gjson.GetBytes(b, "messages").Array()
					out := gjson.GetBytes(res.Body, "messages").Array()
					if out[0].Raw != in[0].Raw || out[len(out)-1].Raw != in[len(in)-1].Raw {
						t.Fatalf("%d messages: head or last message changed", k)
					}
					if n := strings.Count(string(res.Body), `"cache_control"`); n > strings.Count(string(b), `"cache_control"`) {
						t.Fatalf("%d messages: %d cache markers forwarded, more than received", k, n)
					}
				}
				if condensed == 0 {
					t.Fatal("no request was condensed")
				}
			})
		}
	}
}

// TestPairingErrorsForwardUnchanged: a request the API would refuse is
// not condensed into a different one.
func TestPairingErrorsForwardUnchanged(t *testing.T) {
	msgs := claudeSession(12, 40, false)
	orphan := `{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_nowhere","content":"x"}]}`
	unanswered := `{"role":"assistant","content":[{"type":"tool_use","id":"toolu_x","name":"Read","input":{}}]}`
	user := `{"role":"user","content":"next"}`
	for name, tc := range map[string]struct {
		msgs []string
		why  string
	}{
		"orphan result":   {append(append([]string{}, msgs...), `{"role":"assistant","content":"ok"}`, orphan), "answers no pending call"},
		"unanswered call": {append(append([]string{}, msgs...), unanswered, user), "unanswered tool calls"},
	} {
		t.Run(name, func(t *testing.T) {
			e, c := newEngine(16000, condense.Options{SelectiveEnabled: true})
			b := body(tc.msgs, "claude-sonnet-4-5", false)
			res, err := e.Condense(context.Background(), condense.Request{Body: b, Codec: c, Mode: condense.ModeFull})
			if err != nil {
				t.Fatal(err)
			}
			// (The reason quotes the codec's parse error: tc.why.)
			if !bytes.Equal(res.Body, b) || res.Report.Applied != condense.AppliedNone || !res.Report.Took(condense.PathInvalid) ||
				!res.Report.Took(condense.PathForwardedUnchanged) || !strings.Contains(res.Report.Reason, tc.why) {
				t.Fatalf("applied %s, path %v, reason %q", res.Report.Applied, res.Report.Path, res.Report.Reason)
			}
		})
	}
}

// TestDropBlockThroughEngine: a condensed request of a model that binds
// thinking to its prefix asks for drop_block and carries the beta header
// in the result; the same session on another model does not.
func TestDropBlockThroughEngine(t *testing.T) {
	msgs := claudeSession(13, 60, true)
	for _, model := range []string{"claude-fable-5-1", "claude-opus-4-7"} {
		e, c := newEngine(30000, condense.Options{SelectiveEnabled: true, ChunkTokens: 5000})
		b := body(msgs, model, true)
		res, err := e.Condense(context.Background(), condense.Request{Body: b, Codec: c, Mode: condense.ModeFull})
		if err != nil {
			t.Fatal(err)
		}
		if res.Report.Applied == condense.AppliedNone {
			t.Fatalf("%s: not condensed: %s", model, res.Report.Reason)
		}
		set := gjson.GetBytes(res.Body, "thinking.block_binding.prefix_mismatch_behavior").Str == "drop_block"
		header := len(res.Headers) == 1 && res.Headers[0].Value == BindingBeta
		if want := model == "claude-fable-5-1"; set != want || header != want {
			t.Errorf("%s: drop_block %v, beta header %v, want %v", model, set, header, want)
		}
	}
}
