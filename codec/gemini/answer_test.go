package gemini

import (
	"bytes"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/condense-proxy/condense-proxy/codec/internal/answer"
	"github.com/condense-proxy/condense-proxy/internal/fakeupstream"
	"github.com/condense-proxy/condense-proxy/memory"
	"github.com/condense-proxy/condense-proxy/view"
)

const (
	callAnswer = `{"candidates":[{"content":{"role":"model","parts":[{"text":"Looking."},{"functionCall":{"name":"condense_recall","args":{"id":"s1"}},"thoughtSignature":"sig"},{"functionCall":{"id":"c2","name":"read_file","args":{"absolute_path":"/a"}}}]},"finishReason":"STOP","index":0}],` +
		`"usageMetadata":{"promptTokenCount":1000,"cachedContentTokenCount":600,"candidatesTokenCount":20,"thoughtsTokenCount":30,"totalTokenCount":1050}}`
	textAnswer = `{"candidates":[{"content":{"role":"model","parts":[{"text":"All done."}]},"finishReason":"STOP","index":0}],"usageMetadata":{"promptTokenCount":10,"candidatesTokenCount":3}}`
)

// TestMeter: usageMetadata's cached tokens are cache reads, the rest
// uncached, thoughts output; a call is no end of turn; a STOP without
// calls is; SSE chunks and a JSON array of chunks read alike.
func TestMeter(t *testing.T) {
	c := New(sharedCounter)
	read := func(sse bool, b string) view.Outcome {
		ar := c.AnswerReader(sse)
		ar.Write([]byte(b))
		return ar.Outcome()
	}
	o := read(false, callAnswer)
	if o.EndTurn || !o.ToolCall || o.Usage != (view.Usage{Known: true, CacheRead: 600, Uncached: 400, Output: 50}) {
		t.Fatalf("call answer: %+v", o)
	}
	if o := read(false, textAnswer); !o.EndTurn || o.ToolCall || o.Usage.Uncached != 10 {
		t.Fatalf("text answer: %+v", o)
	}
	sse := "data: " + `{"candidates":[{"content":{"role":"model","parts":[{"text":"All"}]},"index":0}],"usageMetadata":{"promptTokenCount":10}}` + "\r\n\r\n" +
		"data: " + textAnswer + "\r\n\r\n"
	if o := read(true, sse); !o.EndTurn || o.Usage.Output != 3 {
		t.Fatalf("sse: %+v", o)
	}
	if o := read(false, "["+textAnswer+",\r\n"+callAnswer+"]"); o.EndTurn || !o.ToolCall {
		t.Fatalf("array: %+v", o)
	}
	if o := read(false, `{"error":{"code":429,"message":"quota","status":"RESOURCE_EXHAUSTED"}}`); !o.Failed || o.EndTurn {
		t.Fatalf("error: %+v", o)
	}
	if o := read(false, `{"candidates":[{"finishReason":"SAFETY","index":0}]}`); !o.Failed {
		t.Fatalf("safety: %+v", o)
	}
}

// TestPing: the bound set to 1, everything else byte for byte; a
// streamed request is pinged at generateContent without alt=sse.
func TestPing(t *testing.T) {
	c := New(sharedCounter)
	b := body(cliSession(6, 3))
	ping, out, err := c.Ping(b, false)
	if err != nil || out != 1 || gjson.GetBytes(ping, "generationConfig.maxOutputTokens").Int() != 1 {
		t.Fatalf("ping %s %d %v", ping, out, err)
	}
	for _, f := range []string{"contents", "systemInstruction", "tools", "generationConfig.thinkingConfig"} {
		if gjson.GetBytes(ping, f).Raw != gjson.GetBytes(b, f).Raw {
			t.Fatalf("%s changed", f)
		}
	}
	p, q := c.PingPath("/v1beta/models/gemini-2.5-pro:streamGenerateContent", "alt=sse&key=k")
	if p != "/v1beta/models/gemini-2.5-pro:generateContent" || q != "key=k" {
		t.Fatalf("ping path %s ? %s", p, q)
	}
	if _, _, err := c.Ping([]byte(`[1]`), false); err != view.ErrNoPing {
		t.Fatalf("not a request: %v", err)
	}
}

// TestRecallTurn: the tool joins the request's function declarations;
// an answer's calls are read with their parts; the turn appended with the
// recall's result and without the agent's call is a request the strict
// fake accepts, the signature kept on its part.
func TestRecallTurn(t *testing.T) {
	c := New(sharedCounter)
	b := body(cliSession(7, 3))
	withTool, ok, err := c.AddTool(b, memory.Tool)
	if err != nil || !ok || gjson.GetBytes(withTool, "tools.0.functionDeclarations.#").Int() != 2 ||
		gjson.GetBytes(withTool, "tools.0.functionDeclarations.1.name").Str != memory.ToolName {
		t.Fatalf("add tool: %v %v %s", ok, err, gjson.GetBytes(withTool, "tools").Raw)
	}
	if again, _, _ := c.AddTool(b, memory.Tool); !bytes.Equal(again, withTool) {
		t.Fatal("AddTool is not stable")
	}
	ans := strings.Replace(callAnswer, `"sig"`, `"`+fakeupstream.DefaultSigner.SignThinking(`call:condense_recall:{"id":"s1"}`)+`"`, 1)
	a, err := c.ReadAnswer([]byte(ans))
	if err != nil || len(a.Calls) != 2 || a.Calls[0].Name != memory.ToolName || a.Calls[1].ID != "c2" {
		t.Fatalf("read: %+v %v", a.Calls, err)
	}
	recallOnly := func(i int, tc view.ToolCall) bool { return tc.Name == memory.ToolName }
	next, err := c.AppendTurn(withTool, a, recallOnly, []view.ToolResult{{CallID: a.Calls[0].ID, Text: "the original"}})
	if err != nil {
		t.Fatal(err)
	}
	if e := fakeupstream.ValidateGemini(next, fakeupstream.DefaultSigner); e != nil {
		t.Fatalf("next round refused: %s\n%s", e.Message, gjson.GetBytes(next, "contents.@reverse.0").Raw)
	}
	if strings.Contains(string(next), `"read_file","args":{"absolute_path":"/a"}`) {
		t.Fatal("the agent's call went into the proxy's round")
	}
	dropped, err := c.DropCalls([]byte(ans), func(tc view.ToolCall) bool { return tc.Name == memory.ToolName })
	if err != nil || strings.Contains(string(dropped), memory.ToolName) || gjson.GetBytes(dropped, "candidates.0.content.parts.#").Int() != 2 {
		t.Fatalf("drop: %s %v", dropped, err)
	}
}

// TestStreamRelease: chunks before the first call pass; the call chunk
// is a call; released without the proxy's call, the chunk keeps the
// agent's call and the finish.
func TestStreamRelease(t *testing.T) {
	s := New(sharedCounter).Stream(memory.ToolName)
	ev := func(data string) []byte { return []byte("data: " + data) }
	k, _, _ := s.Event(ev(`{"candidates":[{"content":{"role":"model","parts":[{"text":"Looking."}]},"index":0}]}`))
	if k != view.EventPass {
		t.Fatalf("text chunk: %v", k)
	}
	callChunk := `{"candidates":[{"content":{"role":"model","parts":[{"functionCall":{"name":"condense_recall","args":{"id":"s1"}}},{"functionCall":{"name":"read_file","args":{}}}]},"finishReason":"STOP","index":0}],"usageMetadata":{"promptTokenCount":5}}`
	k, out, call := s.Event(ev(callChunk))
	if k != view.EventCall || call != 0 || len(s.Answer().Calls) != 2 {
		t.Fatalf("call chunk: %v %d %+v", k, call, s.Answer().Calls)
	}
	rel := s.Release([]view.Held{{Event: out, Call: 0}}, func(i int, tc view.ToolCall) bool { return tc.Name == memory.ToolName })
	_, data := answer.Parse(bytes.TrimRight(rel, "\n"))
	if g := gjson.ParseBytes(data); g.Get("candidates.0.content.parts.#").Int() != 1 || g.Get("candidates.0.content.parts.0.functionCall.name").Str != "read_file" ||
		g.Get("candidates.0.finishReason").Str != "STOP" {
		t.Fatalf("released %s", rel)
	}
}

// TestSummaryAPI: the path names the model; the request is one user
// content under a system instruction; the answer's text leaves thoughts
// out.
func TestSummaryAPI(t *testing.T) {
	c := New(sharedCounter)
	if p, _ := c.SummaryPath("models/gemini-2.5-flash"); p != "/v1beta/models/gemini-2.5-flash:generateContent" {
		t.Fatalf("path %s", p)
	}
	b, _ := c.SummaryRequest(view.Summary{Model: "m", System: "sys", User: "text", MaxTokens: 100, Reasoning: true})
	if e := fakeupstream.ValidateGemini(b, fakeupstream.DefaultSigner); e != nil || gjson.GetBytes(b, "generationConfig.maxOutputTokens").Int() != 100+view.ReasoningRoom {
		t.Fatalf("request %s %v", b, e)
	}
	text, err := c.SummaryText([]byte(`{"candidates":[{"content":{"parts":[{"text":"hmm","thought":true},{"text":" The summary. "}]}}]}`))
	if err != nil || text != "The summary." {
		t.Fatalf("%q %v", text, err)
	}
	if _, err := c.SummaryText([]byte(`{"candidates":[{"content":{"parts":[{"text":"x","thought":true}]}}]}`)); err != view.ErrNoText {
		t.Fatalf("no text: %v", err)
	}
}

// TestGeminiCLICompaction: Gemini CLI's compression requests (their last
// user turn, as 0.61.0 sends them: the snapshot asked for, then its
// verification after the model's snapshot) are marked as the agent's
// compaction.
func TestGeminiCLICompaction(t *testing.T) {
	cs := cliSession(8, 3)
	for _, last := range []string{
		`{"role":"user","parts":[{"text":"Generate a new <state_snapshot> based on the provided history.\n\nFirst, reason in your scratchpad. Then, generate the updated <state_snapshot>."}]}`,
		`{"role":"user","parts":[{"text":"Critically evaluate the <state_snapshot> you just generated. Did you omit any specific technical details, file paths, tool results, or user constraints mentioned in the history? If anything is missing or could be more precise, generate a FINAL, improved <state_snapshot>. Otherwise, repeat the exact same <state_snapshot> again."}]}`,
	} {
		r, err := New(sharedCounter).Scan(body(append(cs, `{"role":"model","parts":[{"text":"<state_snapshot>ok</state_snapshot>"}]}`, last)), o200k)
		if err != nil || r.Compaction != "gemini-cli" {
			t.Fatalf("compaction %q %v: %.60s", r.Compaction, err, last)
		}
	}
}
