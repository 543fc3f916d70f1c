// Package corpus converts recorded coding-agent sessions into OpenAI
// chat-completions message lists, so benchmarks and the replay evaluation
// can feed real traffic through the proxy.
//
// Three formats are understood (see shared/corpus/FORMATS.md):
// mini-swe-agent trajectories (*.traj.json), SWE-agent trajectories (*.traj)
// and Claude Code session logs (*.jsonl). Every converter emits a valid
// conversation: a system message first, every assistant tool call answered
// by one tool message right after it, and no orphan tool message.
package corpus

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Message is one chat-completions message. Content is a string or null.
type Message struct {
	Role       string     `json:"role"`
	Content    *string    `json:"content"`
	ToolCalls  []ToolCall `json:"tool_calls,omitempty"`
	ToolCallID string     `json:"tool_call_id,omitempty"`
	// Reasoning is the assistant's recorded reasoning (DeepSeek's
	// reasoning_content, Claude's thinking), never sent in chat form; the
	// Responses form turns it into reasoning items.
	Reasoning string `json:"-"`
}

// ToolCall is an assistant's function call.
type ToolCall struct {
	ID       string   `json:"id"`
	Type     string   `json:"type"`
	Function Function `json:"function"`
}

// Function names a tool and carries its JSON arguments.
type Function struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// Session is one converted conversation.
type Session struct {
	Name     string
	Format   string
	Messages []Message
	Tools    []string // tool names that occur, sorted by first use
}

// DefaultSystemPrompt is added to sessions whose log has none.
const DefaultSystemPrompt = "You are a coding agent working in a software repository. Use the tools to inspect and change files."

// Str returns a pointer to s, for Message.Content.
func Str(s string) *string { return &s }

// Load reads and converts one session file, choosing the converter by name.
func Load(path string) (*Session, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading session: %w", err)
	}
	name := filepath.Base(path)
	var s *Session
	switch {
	case strings.HasSuffix(name, ".traj.json"):
		s, err = MiniSWEAgent(data)
	case strings.HasSuffix(name, ".traj"):
		s, err = SWEAgent(data)
	case strings.HasSuffix(name, ".jsonl"):
		s, err = ClaudeCode(data)
	default:
		return nil, fmt.Errorf("%s: unknown session format (want .traj.json, .traj or .jsonl)", name)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	s.Name = name
	return s, nil
}

// MiniSWEAgent converts a mini-swe-agent trajectory (format F1).
func MiniSWEAgent(data []byte) (*Session, error) {
	var doc struct {
		Format   string `json:"trajectory_format"`
		Messages []struct {
			Role             string          `json:"role"`
			Content          json.RawMessage `json:"content"`
			ToolCalls        []ToolCall      `json:"tool_calls"`
			ToolCallID       string          `json:"tool_call_id"`
			ReasoningContent string          `json:"reasoning_content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("parsing mini-swe-agent trajectory: %w", err)
	}
	if len(doc.Messages) == 0 {
		return nil, errors.New("mini-swe-agent trajectory has no messages")
	}
	var msgs []Message
	for _, m := range doc.Messages {
		if m.Role == "exit" {
			continue
		}
		msgs = append(msgs, Message{Role: m.Role, Content: textOf(m.Content), ToolCalls: cleanCalls(m.ToolCalls), ToolCallID: m.ToolCallID,
			Reasoning: m.ReasoningContent})
	}
	return finish("mini-swe-agent", msgs)
}

// SWEAgent converts a SWE-agent trajectory's history (format F2), both the
// 1.x function-calling form and the 0.x legacy form.
func SWEAgent(data []byte) (*Session, error) {
	var doc struct {
		History []struct {
			Role        string          `json:"role"`
			Content     json.RawMessage `json:"content"`
			ToolCalls   []ToolCall      `json:"tool_calls"`
			ToolCallIDs []string        `json:"tool_call_ids"`
		} `json:"history"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("parsing SWE-agent trajectory: %w", err)
	}
	if len(doc.History) == 0 {
		return nil, errors.New("SWE-agent trajectory has no history")
	}
	var msgs []Message
	for _, m := range doc.History {
		msg := Message{Role: m.Role, Content: textOf(m.Content), ToolCalls: cleanCalls(m.ToolCalls)}
		if m.Role == "tool" && len(m.ToolCallIDs) > 0 {
			msg.ToolCallID = m.ToolCallIDs[0]
		}
		msgs = append(msgs, msg)
	}
	return finish("swe-agent", msgs)
}

// ClaudeCode converts a Claude Code session log (format F3): the main
// thread only (sidechains left out), assistant blocks merged by message id,
// tool_use blocks as tool calls and tool_result blocks as tool messages.
func ClaudeCode(data []byte) (*Session, error) {
	type block struct {
		Type      string          `json:"type"`
		Text      string          `json:"text"`
		Thinking  string          `json:"thinking"`
		ID        string          `json:"id"`
		Name      string          `json:"name"`
		Input     json.RawMessage `json:"input"`
		ToolUseID string          `json:"tool_use_id"`
		Content   json.RawMessage `json:"content"`
		IsError   bool            `json:"is_error"`
	}
	type line struct {
		Type        string `json:"type"`
		IsSidechain bool   `json:"isSidechain"`
		Message     struct {
			ID      string          `json:"id"`
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"message"`
	}
	var msgs []Message
	lastAssistantID := ""
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 1<<20), 64<<20)
	n := 0
	for sc.Scan() {
		raw := bytes.TrimSpace(sc.Bytes())
		if len(raw) == 0 {
			continue
		}
		n++
		var l line
		if err := json.Unmarshal(raw, &l); err != nil {
			return nil, fmt.Errorf("line %d: %w", n, err)
		}
		if l.IsSidechain || (l.Type != "user" && l.Type != "assistant") {
			continue
		}
		var blocks []block
		var text string
		if err := json.Unmarshal(l.Message.Content, &text); err != nil {
			if err := json.Unmarshal(l.Message.Content, &blocks); err != nil {
				return nil, fmt.Errorf("line %d: content is neither text nor blocks", n)
			}
		} else {
			blocks = []block{{Type: "text", Text: text}}
		}
		if l.Type == "assistant" {
			if l.Message.ID == "" || l.Message.ID != lastAssistantID || len(msgs) == 0 || msgs[len(msgs)-1].Role != "assistant" {
				msgs = append(msgs, Message{Role: "assistant"})
			}
			lastAssistantID = l.Message.ID
			am := &msgs[len(msgs)-1]
			for _, b := range blocks {
				switch b.Type {
				case "text":
					s := b.Text
					if am.Content != nil && *am.Content != "" {
						s = *am.Content + "\n\n" + s
					}
					am.Content = &s
				case "thinking":
					if am.Reasoning != "" {
						am.Reasoning += "\n\n"
					}
					am.Reasoning += b.Thinking
				case "tool_use":
					args := string(b.Input)
					if args == "" {
						args = "{}"
					}
					am.ToolCalls = append(am.ToolCalls, ToolCall{ID: b.ID, Type: "function", Function: Function{Name: b.Name, Arguments: args}})
				}
			}
			continue
		}
		lastAssistantID = ""
		var userText []string
		for _, b := range blocks {
			switch b.Type {
			case "tool_result":
				c := resultText(b.Content)
				if b.IsError {
					c = "[error] " + c
				}
				msgs = append(msgs, Message{Role: "tool", ToolCallID: b.ToolUseID, Content: Str(c)})
			case "text":
				userText = append(userText, b.Text)
			case "image":
				userText = append(userText, "[image]")
			}
		}
		if len(userText) > 0 {
			msgs = append(msgs, Message{Role: "user", Content: Str(strings.Join(userText, "\n"))})
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading session log: %w", err)
	}
	if len(msgs) == 0 {
		return nil, errors.New("session log has no main-thread messages")
	}
	return finish("claude-code", msgs)
}

func resultText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(raw, &parts) == nil {
		var out []string
		for _, p := range parts {
			if p.Type == "text" {
				out = append(out, p.Text)
			} else {
				out = append(out, "["+p.Type+"]")
			}
		}
		return strings.Join(out, "\n")
	}
	return string(raw)
}

// textOf turns a content field (string, null or a list of parts) into text.
func textOf(raw json.RawMessage) *string {
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return &s
	}
	t := resultText(raw)
	return &t
}

func cleanCalls(calls []ToolCall) []ToolCall {
	out := make([]ToolCall, 0, len(calls))
	for _, c := range calls {
		c.Type = "function"
		if c.Function.Arguments == "" {
			c.Function.Arguments = "{}"
		}
		out = append(out, c)
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// finish repairs a message list into a valid conversation: a system prompt
// first; each assistant's tool calls answered right after it (answers moved
// into place, missing ones added as "[no result recorded]"); tool messages
// with no call dropped; the final dangling tool call (a submit with no
// reply) cut together with its assistant message.
func finish(format string, in []Message) (*Session, error) {
	var msgs []Message
	if len(in) == 0 || in[0].Role != "system" {
		msgs = append(msgs, Message{Role: "system", Content: Str(DefaultSystemPrompt)})
	}
	// Index tool answers by call id, in order of appearance.
	answers := map[string]Message{}
	for _, m := range in {
		if m.Role == "tool" && m.ToolCallID != "" {
			if _, dup := answers[m.ToolCallID]; !dup {
				answers[m.ToolCallID] = m
			}
		}
	}
	used := map[string]bool{}
	seenTools := map[string]bool{}
	var tools []string
	for i, m := range in {
		switch m.Role {
		case "tool":
			continue // placed after their call below
		case "assistant":
			if len(m.ToolCalls) > 0 {
				var calls []ToolCall
				for _, c := range m.ToolCalls {
					if c.ID == "" || used[c.ID] {
						continue
					}
					calls = append(calls, c)
				}
				m.ToolCalls = calls
				missing := 0
				for _, c := range calls {
					if _, ok := answers[c.ID]; !ok {
						missing++
					}
				}
				if missing == len(calls) && i == len(in)-1 && len(calls) > 0 {
					continue // the final unanswered call
				}
				if m.Content == nil && len(calls) == 0 {
					m.Content = Str("")
				}
				msgs = append(msgs, m)
				for _, c := range calls {
					used[c.ID] = true
					if !seenTools[c.Function.Name] {
						seenTools[c.Function.Name] = true
						tools = append(tools, c.Function.Name)
					}
					a, ok := answers[c.ID]
					if !ok {
						a = Message{Role: "tool", ToolCallID: c.ID, Content: Str("[no result recorded]")}
					}
					if a.Content == nil {
						a.Content = Str("")
					}
					msgs = append(msgs, a)
				}
				continue
			}
			if m.Content == nil {
				m.Content = Str("")
			}
			msgs = append(msgs, m)
		case "system", "user", "developer":
			if m.Content == nil {
				m.Content = Str("")
			}
			msgs = append(msgs, m)
		}
	}
	// A conversation sent to the API ends with a user or tool message; an
	// assistant message at the very end is the reply being waited for.
	for len(msgs) > 1 && msgs[len(msgs)-1].Role == "assistant" && len(msgs[len(msgs)-1].ToolCalls) == 0 {
		msgs = msgs[:len(msgs)-1]
	}
	if len(msgs) < 2 {
		return nil, errors.New("no conversation left after conversion")
	}
	return &Session{Format: format, Messages: msgs, Tools: tools}, nil
}

// Request returns the chat-completions request body of the first n
// messages of s (all when n <= 0 or n is larger), with a tools list made
// from the tool names that occur in them.
func (s *Session) Request(model string, n int) ([]byte, error) {
	if n <= 0 || n > len(s.Messages) {
		n = len(s.Messages)
	}
	type fn struct {
		Name       string          `json:"name"`
		Parameters json.RawMessage `json:"parameters"`
	}
	type tool struct {
		Type     string `json:"type"`
		Function fn     `json:"function"`
	}
	var tools []tool
	for _, name := range s.Tools {
		tools = append(tools, tool{Type: "function", Function: fn{Name: name, Parameters: json.RawMessage(`{"type":"object","properties":{}}`)}})
	}
	body := struct {
		Model    string    `json:"model"`
		Messages []Message `json:"messages"`
		Tools    []tool    `json:"tools,omitempty"`
	}{model, s.Messages[:n], tools}
	return json.Marshal(body)
}

// TurnEnds returns the message counts at which the agent sends a request:
// before each assistant message, and the whole session.
func (s *Session) TurnEnds() []int {
	var ends []int
	for i, m := range s.Messages {
		if m.Role == "assistant" && i > 0 {
			ends = append(ends, i)
		}
	}
	ends = append(ends, len(s.Messages))
	return ends
}

// Files lists the session files under dir, recursively, sorted.
func Files(dir string) ([]string, error) {
	var out []string
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		n := d.Name()
		if !d.IsDir() && (strings.HasSuffix(n, ".traj.json") || strings.HasSuffix(n, ".traj") || strings.HasSuffix(n, ".jsonl")) {
			out = append(out, p)
		}
		return nil
	})
	return out, err
}
