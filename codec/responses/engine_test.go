package responses

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/condense-proxy/condense-proxy/cache"
	"github.com/condense-proxy/condense-proxy/condense"
	"github.com/condense-proxy/condense-proxy/internal/testenv"
	"github.com/condense-proxy/condense-proxy/selective"
	"github.com/condense-proxy/condense-proxy/tokenizer"
)

var sharedCounter = tokenizer.New(tokenizer.Options{})

// newEngine returns the real engine with the Responses codec, extractive
// summaries and a memory cache, for a model of the given window.
func newEngine(window int, o condense.Options) (*condense.Engine, *Codec) {
	c := New(sharedCounter)
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

// validEnds returns the indexes k such that items[:k] is a request Codex
// could send: it ends after a tool output or a user message, with every
// call answered.
func validEnds(items []string) []int {
	var ends []int
	pending := map[string]bool{}
	for k := 1; k <= len(items); k++ {
		g := gjson.Parse(items[k-1])
		typ := g.Get("type").Str
		switch {
		case strings.HasSuffix(typ, "_output"):
			delete(pending, g.Get("call_id").Str)
		case strings.HasSuffix(typ, "_call") && g.Get("call_id").Exists():
			pending[g.Get("call_id").Str] = true
		}
		if k > 6 && len(pending) == 0 && (strings.HasSuffix(typ, "_output") || (typ == "message" && g.Get("role").Str == "user")) {
			ends = append(ends, k)
		}
	}
	return ends
}

// TestCondensedSessionsAreValid runs long Codex-like sessions through the
// real engine in every mode and checks each condensed request: valid for
// the API (checkValid), head and last item verbatim, never larger than
// received, within the window.
func TestCondensedSessionsAreValid(t *testing.T) {
	if testenv.Unraced(t) {
		return // a sequential replay: its verdict, without the race detector
	}
	const window = 64000
	modes := []string{condense.ModeFull, condense.ModeSelective, condense.ModeAuto, condense.ModeTruncate}
	for _, seed := range []int64{1, 2, 3} {
		items := codexSession(seed, 100)
		for _, mode := range modes {
			t.Run(fmt.Sprintf("seed%d/%s", seed, mode), func(t *testing.T) {
				e, c := newEngine(window, condense.Options{SelectiveEnabled: true, ChunkTokens: 6000, SummaryBudgetTokens: 3000,
					Selective: selective.Options{ClearToolInputs: true}})
				ends := validEnds(items)
				condensed := 0
				// The whole session, and a sample of shorter requests as
				// the session grows turn by turn.
				for n, k := range ends {
					if n%15 != 0 && k != len(items) {
						continue
					}
					body := codexBody(items[:k])
					res, err := e.Condense(context.Background(), condense.Request{Codec: New(sharedCounter), Body: body, Mode: mode, Scope: "test"})
					if err != nil {
						t.Fatal(err)
					}
					rep := res.Report
					if !rep.Counted || rep.Format != Format {
						t.Fatalf("not counted: %+v", rep)
					}
					if rep.TokensAfter > rep.TokensBefore || len(res.Body) > len(body) {
						t.Fatalf("%d items: forwarded %d tokens / %d bytes for %d / %d", k, rep.TokensAfter, len(res.Body), rep.TokensBefore, len(body))
					}
					if rep.TokensBefore <= rep.Trigger {
						if !bytes.Equal(res.Body, body) {
							t.Fatalf("%d items: under the threshold but changed", k)
						}
						continue
					}
					if rep.Applied == condense.AppliedNone {
						t.Fatalf("%d items: over the threshold, not condensed: %s", k, rep.Reason)
					}
					condensed++
					if rep.TokensAfter > window {
						t.Fatalf("%d items: %d tokens forwarded, over the window", k, rep.TokensAfter)
					}
					checkValid(t, body, res.Body)
					in, _ := c.Scan(body, o200k)
					if err := c.Parse(in); err != nil {
						t.Fatal(err)
					}
					outItems, _, _ := inputItems(t, res.Body)
					for i := 0; i < in.Head; i++ {
						if outItems[i] != in.Raw(i) {
							t.Fatalf("%d items: head item %d changed", k, i)
						}
					}
					if outItems[len(outItems)-1] != items[k-1] {
						t.Fatalf("%d items: last item changed", k)
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
	items := codexSession(4, 40)
	orphan := `{"type":"function_call_output","call_id":"call_nowhere","output":"x"}`
	unanswered := `{"type":"function_call","id":"fc_x","name":"exec_command","arguments":"{}","call_id":"call_x"}`
	user := `{"type":"message","role":"user","content":[{"type":"input_text","text":"next"}]}`
	tests := map[string]struct {
		items []string
		why   string
	}{
		"orphan output":   {append(append([]string{}, items...), orphan), "answers no pending call"},
		"unanswered call": {append(append([]string{}, items...), unanswered, user), "unanswered tool calls"},
		"unknown item":    {append(append([]string{}, items...), `{"type":"item_reference","id":"msg_1"}`), "does not condense"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			e, _ := newEngine(16000, condense.Options{SelectiveEnabled: true})
			body := codexBody(tc.items)
			res, err := e.Condense(context.Background(), condense.Request{Codec: New(sharedCounter), Body: body, Mode: condense.ModeFull})
			if err != nil {
				t.Fatal(err)
			}
			// (The reason quotes the codec's parse error: tc.why.)
			if !bytes.Equal(res.Body, body) || res.Report.Applied != condense.AppliedNone || !res.Report.Took(condense.PathInvalid) ||
				!res.Report.Took(condense.PathForwardedUnchanged) || !strings.Contains(res.Report.Reason, tc.why) {
				t.Fatalf("applied %s, path %v, reason %q", res.Report.Applied, res.Report.Path, res.Report.Reason)
			}
		})
	}
}

// TestUntouchableThroughEngine: previous_response_id requests are counted,
// never condensed, and the report says so.
func TestUntouchableThroughEngine(t *testing.T) {
	e, _ := newEngine(16000, condense.Options{SelectiveEnabled: true})
	body := bytes.Replace(codexBody(codexSession(5, 40)), []byte(`"store":false`), []byte(`"store":true,"previous_response_id":"resp_abc"`), 1)
	res, err := e.Condense(context.Background(), condense.Request{Codec: New(sharedCounter), Body: body})
	if err != nil {
		t.Fatal(err)
	}
	rep := res.Report
	if !bytes.Equal(res.Body, body) || !rep.Counted || rep.TokensBefore <= rep.Trigger ||
		!rep.Took(condense.PathUntouchable) || !rep.DegradedBy(condense.DegradedUntouchable) {
		t.Fatalf("%+v", rep)
	}
}

// TestReplayKeepsPrefixStable: a session replayed turn by turn at a 128k
// window with the default options; full condensing keeps the previous
// condensed request a byte-identical prefix of the next at least 90% of
// the time (provider prompt caches stay warm).
func TestReplayKeepsPrefixStable(t *testing.T) {
	if testenv.Unraced(t) {
		return // a sequential replay: its verdict, without the race detector
	}
	items := codexSession(6, 150)
	e, _ := newEngine(128000, condense.Options{SelectiveEnabled: true})
	var prev []string
	same, pairs := 0, 0
	for _, k := range validEnds(items) {
		body := codexBody(items[:k])
		res, err := e.Condense(context.Background(), condense.Request{Codec: New(sharedCounter), Body: body, Mode: condense.ModeFull, Scope: "s"})
		if err != nil {
			t.Fatal(err)
		}
		if res.Report.Applied == condense.AppliedNone {
			prev = nil
			continue
		}
		out, _, _ := inputItems(t, res.Body)
		if prev != nil {
			pairs++
			// The previous request's items are a prefix of this one's,
			// up to the previous last item.
			stable := len(out) >= len(prev)
			for i := 0; stable && i < len(prev); i++ {
				stable = out[i] == prev[i]
			}
			if stable {
				same++
			}
		}
		prev = out
	}
	t.Logf("prefix kept on %d of %d", same, pairs)
	if pairs == 0 || float64(same)/float64(pairs) < 0.9 {
		t.Fatalf("prefix kept on %d of %d consecutive condensed requests", same, pairs)
	}
}

// TestClearToolInputs: clear_tool_inputs shortens a large old
// function_call's arguments string; it stays a JSON string holding JSON
// and nothing else of the item changes.
func TestClearToolInputs(t *testing.T) {
	items := codexSessionSized(8, 30, 5, 5)
	big := fmt.Sprintf(`{"cmd":%s,"workdir":"/repo"}`, q("cat > pkg/big.go <<'EOF'\n"+strings.Repeat("// generated line of a big file written by a heredoc\n", 400)+"EOF"))
	items = append(items[:5:5], append([]string{
		`{"type":"reasoning","id":"rs_big","summary":[],"encrypted_content":"QUJD"}`,
		`{"type":"function_call","id":"fc_big","name":"exec_command","arguments":` + q(big) + `,"call_id":"call_big"}`,
		`{"type":"function_call_output","call_id":"call_big","output":"ok"}`,
	}, items[5:]...)...)
	e, _ := newEngine(30000, condense.Options{SelectiveEnabled: true, Selective: selective.Options{ClearToolInputs: true, MinToolOutputTokens: 100}})
	body := codexBody(items)
	res, err := e.Condense(context.Background(), condense.Request{Codec: New(sharedCounter), Body: body, Mode: condense.ModeSelective, Force: true})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Report.Took(condense.PathInputsShortened) {
		t.Fatalf("path %v, reason %q", res.Report.Path, res.Report.Reason)
	}
	checkValid(t, body, res.Body)
	out, _, _ := inputItems(t, res.Body)
	args := gjson.Get(out[6], "arguments")
	if args.Type != gjson.String || !gjson.Valid(args.Str) || !strings.Contains(args.Str, "condensed by condense-proxy") ||
		gjson.Get(args.Str, "workdir").Str != "/repo" || len(out[6]) >= len(items[6]) {
		t.Fatalf("arguments %.300s", args.Raw)
	}
}

// TestNewestStepShrunk: when the step the agent just took is alone over
// the budget (a huge file read at a small window), its output is digested
// in place — the call keeps its output, the request stays valid and fits.
func TestNewestStepShrunk(t *testing.T) {
	items := codexSession(10, 10)
	var huge strings.Builder
	for l := 0; huge.Len() < 160_000; l++ {
		fmt.Fprintf(&huge, "\tv%d := compute(%d) // a line of a very large generated file\n", l, l*7919%100000)
	}
	items = append(items,
		`{"type":"reasoning","id":"rs_huge","summary":[],"encrypted_content":"QUJD"}`,
		`{"type":"function_call","id":"fc_huge","name":"exec_command","arguments":"{\"cmd\":\"cat pkg/huge.go\"}","call_id":"call_huge"}`,
		`{"type":"function_call_output","call_id":"call_huge","output":`+q(huge.String())+`}`)
	for _, mode := range []string{condense.ModeFull, condense.ModeAuto, condense.ModeTruncate, condense.ModeSelective} {
		t.Run(mode, func(t *testing.T) {
			e, _ := newEngine(32000, condense.Options{SelectiveEnabled: true})
			body := codexBody(items)
			res, err := e.Condense(context.Background(), condense.Request{Codec: New(sharedCounter), Body: body, Mode: mode})
			if err != nil {
				t.Fatal(err)
			}
			rep := res.Report
			if rep.Applied == condense.AppliedNone || rep.TokensAfter > 32000 {
				t.Fatalf("applied %s, %d tokens: %s / %s", rep.Applied, rep.TokensAfter, rep.Reason, rep.Degraded)
			}
			checkValid(t, body, res.Body)
			out, _, _ := inputItems(t, res.Body)
			last := gjson.Parse(out[len(out)-1])
			if last.Get("call_id").Str != "call_huge" || !strings.HasPrefix(last.Get("output").Str, "[condense-proxy digest of exec_command") {
				t.Fatalf("last item %.200s", out[len(out)-1])
			}
		})
	}
}
