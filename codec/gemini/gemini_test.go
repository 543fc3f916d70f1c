package gemini

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/condense-proxy/condense-proxy/cache"
	"github.com/condense-proxy/condense-proxy/condense"
	"github.com/condense-proxy/condense-proxy/internal/derivecheck"
	"github.com/condense-proxy/condense-proxy/internal/fakeupstream"
	"github.com/condense-proxy/condense-proxy/jsonscan"
	"github.com/condense-proxy/condense-proxy/selective"
	"github.com/condense-proxy/condense-proxy/tokenizer"
	"github.com/condense-proxy/condense-proxy/view"
)

// TestMain checks every request the engine derives from an edit against
// a scan of the same body.
func TestMain(m *testing.M) { os.Exit(derivecheck.Main(m, condense.VerifyDerived)) }

var sharedCounter = tokenizer.New(tokenizer.Options{})

func o200k(string) string { return tokenizer.O200kBase }

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// signedCall is a model part calling name, signed by the fake's signer
// as Gemini 3 signs a turn's first call.
func signedCall(id, name, args string, sign bool) map[string]any {
	p := map[string]any{"functionCall": map[string]any{"id": id, "name": name, "args": json.RawMessage(args)}}
	if sign {
		p["thoughtSignature"] = fakeupstream.DefaultSigner.SignThinking("call:" + name + ":" + gjson.Get(args, "@ugly").Raw)
	}
	return p
}

// cliSession builds a Gemini CLI-like conversation: its set-up exchange
// (the environment as a user content, the model's "Got it."), the task,
// then turns of a model content (a sentence, a signed read_file call) and
// the user content answering it ({"output": a large file}); every tenth
// turn ends with a model text and a new user prompt.
func cliSession(seed int64, turns int) []string {
	rng := rand.New(rand.NewSource(seed))
	cs := []string{
		mustJSON(map[string]any{"role": "user", "parts": []any{map[string]any{"text": "This is the Gemini CLI. We are setting up the context for our chat.\nToday's date is Monday.\nMy operating system is: linux"}}}),
		mustJSON(map[string]any{"role": "model", "parts": []any{map[string]any{"text": "Got it. Thanks for the context!"}}}),
		mustJSON(map[string]any{"role": "user", "parts": []any{map[string]any{"text": fmt.Sprintf("Fix the failing tests in package store (session %d).", seed)}}}),
	}
	for i := 0; i < turns; i++ {
		id := fmt.Sprintf("call_%d_%03d", seed, i)
		args := fmt.Sprintf(`{"absolute_path":"/src/file%d.go"}`, i)
		cs = append(cs, mustJSON(map[string]any{"role": "model", "parts": []any{
			map[string]any{"text": fmt.Sprintf("Reading file%d.go.", i)}, signedCall(id, "read_file", args, i%2 == 0)}}))
		var out strings.Builder
		for l := 0; l < 80+rng.Intn(120); l++ {
			fmt.Fprintf(&out, "%4d\t\tv%d_%d := compute(x*%d, %d) // line of file %d\n", l+1, i, l, rng.Intn(100), rng.Intn(1000), i)
		}
		if i%7 == 3 {
			out.WriteString("store_test.go:42: got 3 want 4\nFAIL\n")
		}
		cs = append(cs, mustJSON(map[string]any{"role": "user", "parts": []any{map[string]any{"functionResponse": map[string]any{
			"id": id, "name": "read_file", "response": map[string]any{"output": out.String()}}}}}))
		if i%10 == 9 {
			cs = append(cs, mustJSON(map[string]any{"role": "model", "parts": []any{map[string]any{"text": "Part done."}}}),
				mustJSON(map[string]any{"role": "user", "parts": []any{map[string]any{"text": fmt.Sprintf("Now go on with part %d.", i/10+2)}}}))
		}
	}
	return cs
}

// body wraps contents in a Gemini CLI-like request.
func body(contents []string) []byte {
	return []byte(`{"contents":[` + strings.Join(contents, ",") + `],"systemInstruction":{"role":"user","parts":[{"text":"You are an interactive CLI agent."}]},` +
		`"tools":[{"functionDeclarations":[{"name":"read_file","description":"Reads a file.","parametersJsonSchema":{"type":"object","properties":{"absolute_path":{"type":"string"}}}}]}],` +
		`"generationConfig":{"temperature":0,"topP":1,"thinkingConfig":{"includeThoughts":true}}}`)
}

func scanParse(t *testing.T, c view.Codec, b []byte) *view.Request {
	t.Helper()
	r, err := c.Scan(b, o200k)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Parse(r); err != nil {
		t.Fatal(err)
	}
	return r
}

// TestParse: the set-up exchange and the task are the head; each call is
// glued to its answer, its output the response's string; signed model
// turns are frozen; the model comes from the path.
func TestParse(t *testing.T) {
	c := New(sharedCounter).WithModel("models/gemini-2.5-pro")
	b := body(cliSession(1, 12))
	r := scanParse(t, c, b)
	if r.Model != "gemini-2.5-pro" || r.Head != 3 || r.Total <= r.ItemTokens() {
		t.Fatalf("model %q head %d total %d items %d", r.Model, r.Head, r.Total, r.ItemTokens())
	}
	for i, it := range r.Items[3:] {
		i += 3
		switch {
		case len(it.Calls) == 1:
			if it.Role != view.RoleAssistant || it.Glue || it.Calls[0].Name != "read_file" || it.Frozen != strings.Contains(r.Raw(i), "thoughtSignature") {
				t.Fatalf("item %d: %+v", i, it)
			}
		case len(it.Answers) == 1:
			prev := r.Items[i-1]
			if !it.Glue || it.Answers[0] != prev.Calls[0].ID || len(it.Outputs) != 1 {
				t.Fatalf("item %d: %+v", i, it)
			}
			o := it.Outputs[0]
			v := r.Span(o.Start+o.Value[0], o.Start+o.Value[1])
			if o.Frozen || !strings.HasPrefix(v, `"   1\t`) || gjson.Parse(r.Span(o.Start, o.End)).Get("functionResponse").Raw == "" {
				t.Fatalf("item %d output %q", i, v)
			}
		}
	}
	if got := c.Text(r, 4); len(got.Results) != 1 || !strings.HasPrefix(got.Results[0].Text, "   1\t") {
		t.Fatalf("text %+v", got)
	}
}

// TestParseRefuses: what the API refuses is view.ErrInvalid.
func TestParseRefuses(t *testing.T) {
	c := New(sharedCounter)
	user := `{"role":"user","parts":[{"text":"hi"}]}`
	call := `{"role":"model","parts":[{"functionCall":{"name":"ls","args":{}}}]}`
	for name, cs := range map[string][]string{
		"orphan response": {user, `{"role":"model","parts":[{"text":"ok"}]}`, `{"role":"user","parts":[{"functionResponse":{"name":"ls","response":{"output":"x"}}}]}`},
		"wrong name":      {user, call, `{"role":"user","parts":[{"functionResponse":{"name":"cat","response":{"output":"x"}}}]}`},
		"bad role":        {user, `{"role":"assistant","parts":[{"text":"x"}]}`},
		"no parts":        {user, `{"role":"model","parts":[]}`},
	} {
		r, err := c.Scan([]byte(`{"contents":[`+strings.Join(cs, ",")+`]}`), o200k)
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Parse(r); !errors.Is(err, view.ErrInvalid) {
			t.Errorf("%s: %v", name, err)
		}
	}
	// Without ids, by name (Gemini CLI makes up ids for calls that had none).
	r, _ := c.Scan([]byte(`{"contents":[`+user+`,`+call+`,{"role":"user","parts":[{"functionResponse":{"id":"ls-123","name":"ls","response":{"output":"x"}}}]}]}`), o200k)
	if err := c.Parse(r); err != nil || r.Items[2].Answers[0] != r.Items[1].Calls[0].ID {
		t.Fatalf("by name: %v %+v", err, r.Items[2])
	}
}

// TestSpliceAlternates: a note put between two user contents, or before
// a user content, gets a model turn beside it, so the strict fake accepts
// the result; every kept content stays byte for byte.
func TestSpliceAlternates(t *testing.T) {
	c := New(sharedCounter)
	cs := cliSession(2, 25)
	b := body(cs)
	r := scanParse(t, c, b)
	n := len(r.Items)
	for from := r.Head; from < n-2; from++ {
		if r.Items[from].Glue {
			continue
		}
		for to := from + 1; to < n-1; to++ {
			if r.Items[to].Glue {
				continue
			}
			out, err := c.Splice(r, view.Edit{From: from, To: to, Insert: [][]byte{c.Note("summary")}})
			if err != nil {
				t.Fatal(err)
			}
			if e := fakeupstream.ValidateGemini(out, fakeupstream.DefaultSigner); e != nil {
				t.Fatalf("[%d,%d): %s", from, to, e.Message)
			}
			got := gjson.GetBytes(out, "contents").Array()
			if got[len(got)-1].Raw != cs[n-1] || got[0].Raw != cs[0] || !strings.Contains(string(out), `"text":"summary"`) {
				t.Fatalf("[%d,%d): head or last changed", from, to)
			}
		}
	}
}

// newEngine returns the real engine with extractive summaries.
func newEngine(window int) *condense.Engine {
	return condense.New(condense.Deps{
		Counter: sharedCounter,
		Models: condense.ModelsFunc(func(string) condense.ModelLimits {
			return condense.ModelLimits{Window: window, Threshold: 0.8, Encoding: tokenizer.O200kBase, SafetyFactor: 1}
		}),
		Cache: cache.NewMemory(256 << 20),
	}, condense.Options{Summarizer: "extractive", SelectiveEnabled: true, ChunkTokens: 5000, SummaryBudgetTokens: 3000,
		Selective: selective.Options{ClearToolInputs: true}})
}

// TestCondensedSessionsAreValid runs a long Gemini CLI-like session
// through the real engine in every mode, request by request, and checks
// each condensed one: the strict fake accepts it (alternation, pairing,
// signatures); systemInstruction, tools and generationConfig byte for
// byte; the head and the last content verbatim; within the window.
func TestCondensedSessionsAreValid(t *testing.T) {
	const window = 30000
	cs := cliSession(3, 70)
	for _, mode := range []string{condense.ModeAuto, condense.ModeFull, condense.ModeSelective, condense.ModeTruncate} {
		t.Run(mode, func(t *testing.T) {
			e := newEngine(window)
			c := New(sharedCounter).WithModel("gemini-2.5-pro")
			condensed := 0
			for k := 5; k <= len(cs); k += 2 {
				if gjson.Get(cs[k-1], "role").Str != "user" {
					continue
				}
				b := body(cs[:k])
				res, err := e.Condense(context.Background(), condense.Request{Body: b, Codec: c, Mode: mode, Scope: "test"})
				if err != nil {
					t.Fatal(err)
				}
				rep := res.Report
				if !rep.Counted || rep.Format != Format {
					t.Fatalf("not counted: %+v", rep)
				}
				if rep.TokensBefore <= rep.Trigger {
					if !bytes.Equal(res.Body, b) {
						t.Fatalf("%d contents: under the threshold but changed", k)
					}
					continue
				}
				if rep.Applied == condense.AppliedNone {
					t.Fatalf("%d contents: over the threshold, not condensed: %s", k, rep.Reason)
				}
				condensed++
				if rep.TokensAfter > window {
					t.Fatalf("%d contents: %d tokens forwarded, over the window", k, rep.TokensAfter)
				}
				if e := fakeupstream.ValidateGemini(res.Body, fakeupstream.DefaultSigner); e != nil {
					t.Fatalf("%d contents, %s: the API would refuse it: %s", k, rep.Applied, e.Message)
				}
				for _, f := range []string{"systemInstruction", "tools", "generationConfig"} {
					if gjson.GetBytes(res.Body, f).Raw != gjson.GetBytes(b, f).Raw {
						t.Fatalf("%d contents: %s changed", k, f)
					}
				}
				out := gjson.GetBytes(res.Body, "contents").Array()
				for i := 0; i < 3; i++ {
					if out[i].Raw != cs[i] {
						t.Fatalf("%d contents: head content %d changed", k, i)
					}
				}
				if out[len(out)-1].Raw != cs[k-1] {
					t.Fatalf("%d contents: last content changed", k)
				}
			}
			if condensed == 0 {
				t.Fatal("no request was condensed")
			}
		})
	}
}

// TestCachedContentUntouched: a request naming cachedContent is counted,
// never condensed.
func TestCachedContentUntouched(t *testing.T) {
	cs := cliSession(4, 60)
	b := []byte(`{"cachedContent":"cachedContents/abc","contents":[` + strings.Join(cs, ",") + `]}`)
	res, err := newEngine(20000).Condense(context.Background(), condense.Request{Body: b, Codec: New(sharedCounter), Mode: condense.ModeFull, Scope: "t"})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(res.Body, b) || !res.Report.Counted || res.Report.TokensBefore <= 20000 {
		t.Fatalf("applied %s, %d tokens", res.Report.Applied, res.Report.TokensBefore)
	}
	if _, ok, _ := New(sharedCounter).AddTool(b, view.Tool{Name: "x", Schema: "{}"}); ok {
		t.Fatal("a tool added beside cachedContent")
	}
}

// TestErrorShape: Google's error body.
func TestErrorShape(t *testing.T) {
	b := New(sharedCounter).Error(413, "invalid_request_error", "too big")
	g := gjson.ParseBytes(b)
	if g.Get("error.code").Int() != 413 || g.Get("error.status").Str != "INVALID_ARGUMENT" || g.Get("error.message").Str != "too big" {
		t.Fatalf("%s", b)
	}
}

// FuzzScan: Scan never panics; what it accepts has its contents inside
// the body; Parse and Text never panic; outputs lie inside their content;
// a splice of a parsed body is JSON that scans again.
func FuzzScan(f *testing.F) {
	f.Add(body(cliSession(5, 4)))
	for _, s := range []string{
		`{"contents":[]}`,
		`{"contents":[{"parts":[{"text":"hi"}]}]}`,
		`{"contents":[{"role":"user","parts":[{"text":"x"}]},{"role":"model","parts":[{"functionCall":{"name":"a","args":{}}}]},{"role":"user","parts":[{"functionResponse":{"name":"a","response":{"output":"o","x":1}}}]}]}`,
		`{"contents":"x","contents":[1,"a",null,{"role":7}]}`,
		`{"c\u006fntents":[]}`,
		`{"contents":[{"role":"user","parts":[{"function_response":{"name":"a","response":{"output":"o"}}}]}]}`,
	} {
		f.Add([]byte(s))
	}
	c := New(tokenizer.New(tokenizer.Options{MaxMessages: 1000}))
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) > 64<<10 {
			return
		}
		r, err := c.Scan(b, o200k)
		if err != nil {
			if !errors.Is(err, view.ErrNotRequest) && !errors.Is(err, view.ErrTooManyItems) {
				t.Fatalf("unexpected error %v", err)
			}
			return
		}
		if r.Head < 0 || r.Head > len(r.Items) || r.Total < 0 {
			t.Fatalf("head %d of %d items, total %d", r.Head, len(r.Items), r.Total)
		}
		sameParse(t, c, b)
		if err := c.Parse(r); err != nil {
			if !errors.Is(err, view.ErrInvalid) {
				t.Fatalf("parse error %v is not ErrInvalid", err)
			}
			return
		}
		for i, it := range r.Items {
			c.Text(r, i)
			for _, o := range it.Outputs {
				if o.Start < it.Start || o.End > it.End || (o.Value[1] > 0 && (o.Start+o.Value[1] > o.End || o.Value[0] <= 0)) {
					t.Fatalf("item %d: output [%d,%d) value %v outside the item [%d,%d)", i, o.Start, o.End, o.Value, it.Start, it.End)
				}
			}
		}
		out, err := c.Splice(r, view.Edit{From: r.Head, To: len(r.Items), Insert: [][]byte{c.Note("summary")}})
		if err != nil {
			t.Fatal(err)
		}
		if !jsonscan.Valid(string(out)) {
			t.Fatalf("spliced body is not JSON: %q", out)
		}
		if _, err := c.Scan(out, o200k); err != nil {
			t.Fatalf("spliced body does not scan back: %v", err)
		}
	})
}
