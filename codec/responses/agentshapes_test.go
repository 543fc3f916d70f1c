package responses

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	"github.com/condense-proxy/condense-proxy/condense"
	"github.com/condense-proxy/condense-proxy/internal/fakeupstream"
	"github.com/condense-proxy/condense-proxy/internal/fakeupstream/fakesign"
	"github.com/condense-proxy/condense-proxy/tokenizer"
	"github.com/condense-proxy/condense-proxy/view"
)

// codexSol is a request Codex 0.169 sent with its default model
// (gpt-6.1-sol, no -m), after one exec round trip, trimmed: no top-level
// tools; its tools, a JavaScript exec custom tool among them, are
// declared by an additional_tools input item, first of all.
func codexSol(t *testing.T) []byte {
	t.Helper()
	b, err := os.ReadFile("testdata/codex-gpt-6.1-sol.json")
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestRecordedAdditionalTools: the recorded request scans and parses; the
// additional_tools item is a frozen developer item in the head (with the
// developer and user messages after it), its tools counted with it; the
// exec round trip is paired; the strict fake accepts the request.
func TestRecordedAdditionalTools(t *testing.T) {
	b := codexSol(t)
	if gjson.GetBytes(b, "tools").Exists() {
		t.Fatal("fixture: the recorded request has no top-level tools")
	}
	if err := fakeupstream.ValidateResponses(b, fakeupstream.DefaultSigner); err != nil {
		t.Fatalf("the strict fake refuses the recorded request: %s", err.Message)
	}
	c := newCodec()
	r, err := c.Scan(b, o200k)
	if err != nil {
		t.Fatal(err)
	}
	if r.Head != 7 {
		t.Fatalf("scanned head %d, want 7 (additional_tools, 4 developer, 2 user)", r.Head)
	}
	if err := c.Parse(r); err != nil {
		t.Fatal(err)
	}
	at := r.Items[0]
	if at.Role != view.RoleDeveloper || !at.Frozen || len(at.Outputs) != 0 || len(at.Calls) != 0 {
		t.Fatalf("additional_tools parsed as %+v", at)
	}
	if r.Head != 7 {
		t.Fatalf("parsed head %d, want 7", r.Head)
	}
	if len(r.Items[7].Calls) != 1 || r.Items[7].Calls[0].Name != "exec" || len(r.Items[8].Answers) != 1 || r.Items[8].Answers[0] != r.Items[7].Calls[0].ID {
		t.Fatalf("exec round trip not paired: %+v / %+v", r.Items[7], r.Items[8])
	}
	tools := gjson.GetBytes(b, "input.0.tools").Raw
	if min := tokenizer.New(tokenizer.Options{}).Text(tokenizer.O200kBase, tools); at.Tokens < min {
		t.Fatalf("additional_tools counted %d tokens, its tools alone are %d", at.Tokens, min)
	}
	if got := c.Text(r, 0).Text; got != "[additional_tools]" {
		t.Fatalf("text of additional_tools: %q", got)
	}
}

// signReasoning gives the reasoning items of a session encrypted_content
// the strict fake's signer issued, so that it accepts them.
func signReasoning(t *testing.T, items []string) []string {
	out := make([]string, len(items))
	for i, it := range items {
		out[i] = it
		if gjson.Get(it, "type").Str != "reasoning" {
			continue
		}
		s, err := sjson.Set(it, "encrypted_content", fakesign.Default.Encrypt(fmt.Sprintf("reasoning %d", i)))
		if err != nil {
			t.Fatal(err)
		}
		out[i] = s
	}
	return out
}

// TestAdditionalToolsSurvivesCondensing: a long Codex-like session whose
// tools are an additional_tools item (first, as Codex sends it, or a few
// steps in) and not a tools field is condensed in every mode; the result
// is valid for the strict fake and holds the item verbatim, once, where
// it was, after the same items as received.
func TestAdditionalToolsSurvivesCondensing(t *testing.T) {
	at := gjson.GetBytes(codexSol(t), "input.0").Raw
	const window = 64000
	session := signReasoning(t, codexSession(4, 100))
	// A few steps in: after the third tool output.
	later, outputs := 0, 0
	for later < len(session) && outputs < 3 {
		if gjson.Get(session[later], "type").Str == "function_call_output" {
			outputs++
		}
		later++
	}
	for _, pos := range []int{0, later} {
		for _, mode := range []string{condense.ModeAuto, condense.ModeFull, condense.ModeSelective, condense.ModeTruncate} {
			items := append([]string(nil), session...)
			items = append(items[:pos], append([]string{at}, items[pos:]...)...)
			ends := validEnds(items)
			b, err := sjson.DeleteBytes(codexBody(items[:ends[len(ends)-1]]), "tools")
			if err != nil {
				t.Fatal(err)
			}
			if err := fakeupstream.ValidateResponses(b, fakeupstream.DefaultSigner); err != nil {
				t.Fatalf("the session itself is refused: %s", err.Message)
			}
			e, c := newEngine(window, condense.Options{SelectiveEnabled: true, ChunkTokens: 6000, SummaryBudgetTokens: 3000})
			res, err := e.Condense(context.Background(), condense.Request{Body: b, Codec: c, Mode: mode, Scope: "test"})
			if err != nil {
				t.Fatal(err)
			}
			rep := res.Report
			if rep.Applied == condense.AppliedNone {
				t.Fatalf("at %d, %s: not condensed: %s", pos, mode, rep.Reason)
			}
			if rep.TokensAfter > window {
				t.Fatalf("at %d, %s: %d tokens forwarded", pos, mode, rep.TokensAfter)
			}
			checkValid(t, b, res.Body)
			if err := fakeupstream.ValidateResponses(res.Body, fakeupstream.DefaultSigner); err != nil {
				t.Fatalf("at %d, %s: the API would refuse it: %s", pos, mode, err.Message)
			}
			out, _, _ := inputItems(t, res.Body)
			n, where := 0, -1
			for i, raw := range out {
				if raw == at {
					n, where = n+1, i
				}
			}
			if n != 1 || where != pos {
				t.Fatalf("at %d, %s: additional_tools %d times, at %d", pos, mode, n, where)
			}
			// Nothing before it is cut or moved (a tool output there may
			// be digested: kept items' outputs may be).
			for i := 0; i < pos; i++ {
				for _, f := range []string{"type", "role", "id", "call_id"} {
					if gjson.Get(out[i], f).Raw != gjson.Get(items[i], f).Raw {
						t.Fatalf("at %d, %s: item %d before it is not the same item", pos, mode, i)
					}
				}
			}
		}
	}
}
