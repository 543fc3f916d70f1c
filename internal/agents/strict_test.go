package agents_test

import (
	"strconv"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	"github.com/condense-proxy/condense-proxy/internal/agents"
)

// The strict fakes are the referee of the agent tests: these runs put a
// "broken proxy" (a front that edits what the agent sent) in the path and
// check that the fake rejects the request and the real agent fails, as
// it would against the real API.

func TestClaudeCodeStrictUpstreamCatchesEditedThinking(t *testing.T) {
	bin := agents.Require(t, agents.Claude)
	e := newE2E(t, "messages", claudeWindow, withSteps(3), withTamper(func(path string, body []byte) []byte {
		if path != "/v1/messages" || !gjson.GetBytes(body, "messages.1.content.0.thinking").Exists() {
			return body
		}
		b, _ := sjson.SetBytes(body, "messages.1.content.0.thinking", "an edited thought")
		return b
	}))
	res := e.run(func() agents.Result {
		return agents.Run(agentContext(t), agents.ClaudeCommand(agents.ClaudeOptions{
			Bin: bin, BaseURL: e.stack.Proxy.URL, Home: e.home(), Workdir: e.workdir(), Prompt: "Read the files.",
		}))
	})
	bad := e.rejected("Invalid `signature` in `thinking` block")
	if bad == 0 || res.Err == nil {
		t.Errorf("edited thinking: %d rejected, agent err %v\n%s", bad, res.Err, tail(res.Stdout+res.Stderr))
	}
	t.Logf("agent said: %s", strings.TrimSpace(tail(res.Stdout+res.Stderr)))
}

func TestCodexStrictUpstreamCatchesDroppedOutput(t *testing.T) {
	bin := agents.Require(t, agents.Codex)
	e := newE2E(t, "responses", codexWindow, withSteps(3), withTamper(func(path string, body []byte) []byte {
		// Drop the first function_call_output, as a careless condenser might.
		items := gjson.GetBytes(body, "input").Array()
		for i, it := range items {
			if it.Get("type").String() == "function_call_output" {
				b, _ := sjson.DeleteBytes(body, "input."+strconv.Itoa(i))
				return b
			}
		}
		return body
	}))
	res := e.run(func() agents.Result {
		return agents.Run(agentContext(t), agents.CodexCommand(agents.CodexOptions{
			Bin: bin, BaseURL: e.stack.Proxy.URL + "/v1", Home: e.home(), Workdir: e.workdir(), Prompt: "Print the files.",
		}))
	})
	bad := e.rejected("No tool output found for function call call_read_000")
	if bad == 0 || res.Err == nil {
		t.Errorf("dropped output: %d rejected, agent err %v\n%s", bad, res.Err, tail(res.Stdout+res.Stderr))
	}
	t.Logf("agent said: %s", strings.TrimSpace(tail(res.Stderr)))
}

func TestQwenCodeStrictUpstreamCatchesDroppedToolMessage(t *testing.T) {
	bin := agents.Require(t, agents.Qwen)
	e := newE2E(t, "chat/completions", qwenWindow, withSteps(3), withTamper(func(path string, body []byte) []byte {
		// Drop the first tool message, as a careless condenser might.
		msgs := gjson.GetBytes(body, "messages").Array()
		for i, m := range msgs {
			if m.Get("role").String() == "tool" {
				b, _ := sjson.DeleteBytes(body, "messages."+strconv.Itoa(i))
				return b
			}
		}
		return body
	}))
	res := qwenRun(t, e, bin)
	bad := e.rejected("must be followed by tool messages responding to each")
	if bad == 0 || res.Err == nil {
		t.Errorf("dropped tool message: %d rejected, agent err %v\n%s", bad, res.Err, tail(res.Stdout+res.Stderr))
	}
	t.Logf("agent said: %s", strings.TrimSpace(tail(res.Stdout+res.Stderr)))
}

func TestGeminiCLIStrictUpstreamCatchesEditedSignature(t *testing.T) {
	bin := agents.Require(t, agents.Gemini)
	e := newE2E(t, "gemini", geminiWindow, withSteps(3), withTamper(func(path string, body []byte) []byte {
		// Re-sign nothing, edit the first signed call's arguments, as a
		// careless condenser shortening old calls might.
		at := ""
		gjson.GetBytes(body, "contents").ForEach(func(i, c gjson.Result) bool {
			c.Get("parts").ForEach(func(j, p gjson.Result) bool {
				if p.Get("thoughtSignature").Exists() && p.Get("functionCall").Exists() {
					at = "contents." + i.String() + ".parts." + j.String() + ".functionCall.args.file_path"
				}
				return at == ""
			})
			return at == ""
		})
		if at == "" {
			return body
		}
		b, _ := sjson.SetBytes(body, at, "elided")
		return b
	}))
	res := geminiRun(t, e, bin)
	bad := e.rejected("Corrupted thought signature")
	if bad == 0 || res.Err == nil {
		t.Errorf("edited signed call: %d rejected, agent err %v\n%s", bad, res.Err, tail(res.Stdout+res.Stderr))
	}
	t.Logf("agent said: %s", strings.TrimSpace(tail(res.Stdout+res.Stderr)))
}

// standIn is a naive condenser standing in for the proxy's codecs in the
// self-tests below: it replaces the content of every tool output but the
// newest two with a one-line digest, touching nothing else.
func standIn(format string) func(path string, body []byte) []byte {
	return func(path string, body []byte) []byte {
		var outputs []string // sjson paths of the outputs' contents
		switch {
		case format == "messages" && path == "/v1/messages":
			gjson.GetBytes(body, "messages").ForEach(func(i, m gjson.Result) bool {
				m.Get("content").ForEach(func(j, b gjson.Result) bool {
					if b.Get("type").String() == "tool_result" {
						outputs = append(outputs, "messages."+i.String()+".content."+j.String()+".content")
					}
					return true
				})
				return true
			})
		case format == "chat/completions" && path == "/v1/chat/completions":
			gjson.GetBytes(body, "messages").ForEach(func(i, m gjson.Result) bool {
				if m.Get("role").String() == "tool" {
					outputs = append(outputs, "messages."+i.String()+".content")
				}
				return true
			})
		case format == "gemini" && strings.HasPrefix(path, "/v1beta/models/"):
			gjson.GetBytes(body, "contents").ForEach(func(i, c gjson.Result) bool {
				c.Get("parts").ForEach(func(j, p gjson.Result) bool {
					if p.Get("functionResponse.response.output").Exists() {
						outputs = append(outputs, "contents."+i.String()+".parts."+j.String()+".functionResponse.response.output")
					}
					return true
				})
				return true
			})
		case format == "responses" && path == "/v1/responses":
			gjson.GetBytes(body, "input").ForEach(func(i, it gjson.Result) bool {
				if it.Get("type").String() == "function_call_output" {
					outputs = append(outputs, "input."+i.String()+".output")
				}
				return true
			})
		}
		for k := 0; k+2 < len(outputs); k++ {
			body, _ = sjson.SetBytes(body, outputs[k], "[digest: an old file read, condensed]")
		}
		return body
	}
}

// TestAgentChecksPassWithAStandInCondenser runs the agents with the
// stand-in condenser in front of the proxy: every check of TestClaudeCode,
// TestCodex, TestQwenCode and TestGeminiCLI passes, "was condensed" included — what the real codecs
// must achieve.
func TestAgentChecksPassWithAStandInCondenser(t *testing.T) {
	t.Run("claude", func(t *testing.T) {
		bin := agents.Require(t, agents.Claude)
		e := newE2E(t, "messages", claudeWindow, withTamper(standIn("messages")))
		e.check(e.run(func() agents.Result {
			return agents.Run(agentContext(t), agents.ClaudeCommand(agents.ClaudeOptions{
				Bin: bin, BaseURL: e.stack.Proxy.URL, Home: e.home(), Workdir: e.workdir(), Prompt: "Read the files.",
			}))
		}))
	})
	t.Run("codex", func(t *testing.T) {
		bin := agents.Require(t, agents.Codex)
		e := newE2E(t, "responses", codexWindow, withTamper(standIn("responses")))
		e.check(e.run(func() agents.Result {
			return agents.Run(agentContext(t), agents.CodexCommand(agents.CodexOptions{
				Bin: bin, BaseURL: e.stack.Proxy.URL + "/v1", Home: e.home(), Workdir: e.workdir(), Prompt: "Print the files.",
			}))
		}))
	})
	t.Run("qwen", func(t *testing.T) {
		bin := agents.Require(t, agents.Qwen)
		e := newE2E(t, "chat/completions", qwenWindow, withTamper(standIn("chat/completions")))
		e.check(qwenRun(t, e, bin))
	})
	t.Run("gemini", func(t *testing.T) {
		bin := agents.Require(t, agents.Gemini)
		e := newE2E(t, "gemini", geminiWindow, withTamper(standIn("gemini")))
		e.check(geminiRun(t, e, bin))
	})
}

// rejected counts the requests the strict upstream refused (400) with an
// error that says msg.
func (e *e2e) rejected(msg string) int {
	bad := 0
	for _, r := range e.received() {
		if r.Status == 400 && strings.Contains(r.Error, msg) {
			bad++
		}
	}
	return bad
}
