package agents_test

import (
	"strings"
	"sync/atomic"
	"testing"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	"github.com/condense-proxy/condense-proxy/config"
	"github.com/condense-proxy/condense-proxy/internal/agents"
	"github.com/condense-proxy/condense-proxy/internal/fakeupstream"
	"github.com/condense-proxy/condense-proxy/memory"
)

// recalling wraps a script's answers into a model that, once the proxy
// has added condense_recall, calls it every few steps — alone, or with
// the script's own call for the step — and, given the result, goes on as
// the script would (answering the request without the recall round).
func recalling(format string, recalls *atomic.Int64) func(func([]byte) fakeupstream.Reply) func([]byte) fakeupstream.Reply {
	return func(script func([]byte) fakeupstream.Reply) func([]byte) fakeupstream.Reply {
		var eligible atomic.Int64
		return func(body []byte) fakeupstream.Reply {
			if strings.Contains(lastItem(format, body), memory.ToolName+":") {
				recalls.Add(1)
				return script(withoutRecallRound(format, body))
			}
			rep := script(body)
			if !hasRecallTool(body) || len(rep.Calls) == 0 {
				return rep
			}
			n := eligible.Add(1)
			if n%3 != 1 {
				return rep
			}
			recall := fakeupstream.Call{Name: memory.ToolName, Input: `{"query":"file contents read earlier"}`}
			if n%2 == 0 {
				rep.Calls = append(rep.Calls, recall) // with the agent's own call
			} else {
				rep.Calls = []fakeupstream.Call{recall}
			}
			rep.Text = "Let me recall what I read before."
			return rep
		}
	}
}

func hasRecallTool(body []byte) bool {
	found := false
	gjson.GetBytes(body, "tools").ForEach(func(_, t gjson.Result) bool {
		// Messages and Responses tools name themselves; chat tools in
		// "function".
		found = found || t.Get("name").String() == memory.ToolName || t.Get("function.name").String() == memory.ToolName
		return !found
	})
	return found
}

// lastItem is the raw JSON of the request's last message or item.
func lastItem(format string, body []byte) string {
	if format == "responses" {
		return gjson.GetBytes(body, "input.@reverse.0").Raw
	}
	return gjson.GetBytes(body, "messages.@reverse.0").Raw
}

// withoutRecallRound is the request before the proxy appended its
// recall round (the model's turn and the results: in Messages and chat
// completions, two messages, as recalling makes one recall call a turn).
func withoutRecallRound(format string, body []byte) []byte {
	if format != "responses" {
		out, _ := sjson.DeleteBytes(body, "messages.-1")
		out, _ = sjson.DeleteBytes(out, "messages.-1")
		return out
	}
	out := body
	for {
		last := gjson.GetBytes(out, "input.@reverse.0")
		typ := last.Get("type").String()
		ours := typ == "function_call_output" && strings.HasPrefix(last.Get("output").String(), memory.ToolName+":") ||
			typ == "function_call" && last.Get("name").String() == memory.ToolName ||
			typ == "reasoning" || typ == "message" && last.Get("role").String() == "assistant"
		if !ours {
			return out
		}
		out, _ = sjson.DeleteBytes(out, "input.-1")
	}
}

// TestAgentsNeverSeeTheRecallTool runs the real agents through the proxy
// with the recall tool on, against a model that calls condense_recall
// every few steps (alone, or with the agent's own tool): their sessions
// complete, and nothing the agents send back ever holds a
// condense_recall call (they never received one).
func TestAgentsNeverSeeTheRecallTool(t *testing.T) {
	on := withConfig(func(c *config.Config) { c.Memory.RecallTool = true })
	for _, tc := range []struct {
		agent, format string
		window        int
	}{
		{agents.Claude, "messages", claudeWindow},
		{agents.Codex, "responses", codexWindow},
		{agents.Qwen, "chat/completions", qwenWindow},
	} {
		t.Run(tc.agent, func(t *testing.T) {
			bin := agents.Require(t, tc.agent)
			var recalls atomic.Int64
			e := newE2E(t, tc.format, tc.window, on, withAnswer(recalling(tc.format, &recalls)))
			var res agents.Result
			switch tc.agent {
			case agents.Claude:
				res = e.run(func() agents.Result {
					return agents.Run(agentContext(t), agents.ClaudeCommand(agents.ClaudeOptions{
						Bin: bin, BaseURL: e.stack.Proxy.URL, Home: e.home(), Workdir: e.workdir(), Model: "claude-sonnet-4-5",
						Prompt: "Read the files of this directory one by one as the tools direct, then report.",
					}))
				})
			case agents.Codex:
				res = e.run(func() agents.Result {
					return agents.Run(agentContext(t), agents.CodexCommand(agents.CodexOptions{
						Bin: bin, BaseURL: e.stack.Proxy.URL + "/v1", Home: e.home(), Workdir: e.workdir(),
						Prompt: "Print the files of this directory one by one as the tools direct, then report.",
					}))
				})
			default:
				res = qwenRun(t, e, bin)
			}
			e.check(res)
			withTool := 0
			for _, r := range e.received() {
				if hasRecallTool(r.Body) {
					withTool++
				}
			}
			t.Logf("%d upstream requests carried the tool", withTool)
			for i, x := range e.front.Exchanges() {
				if strings.Contains(string(x.Body), memory.ToolName) {
					t.Errorf("the agent's request %d holds %s: it received a call", i, memory.ToolName)
				}
			}
			if strings.Contains(res.Stdout, memory.ToolName) {
				t.Errorf("the agent printed %s", memory.ToolName)
			}
			if recalls.Load() == 0 {
				t.Error("the model never got a recall answered: the test proves nothing")
			}
			t.Logf("%d recall rounds answered by the proxy", recalls.Load())
		})
	}
}
