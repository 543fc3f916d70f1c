package corpus

import (
	"encoding/json"
	"fmt"
	"math/rand"
	"regexp"
	"strings"
)

// Fact is something planted in a synthetic session that a condensed request
// should still carry (verbatim or in a summary).
type Fact struct {
	Kind string // task, failing-test, error, edited-path, decision
	Text string
}

// Synthetic generates a seeded coding session of about targetChars
// characters of message text: file reads, greps, test runs, edits, parallel
// tool calls and user follow-ups, with planted facts.
func Synthetic(seed int64, targetChars int) (*Session, []Fact) {
	rng := rand.New(rand.NewSource(seed))
	pkgs := []string{"parser", "lexer", "render", "store", "auth", "billing", "cache", "http"}
	task := fmt.Sprintf("Task %d: the function ParseDuration in pkg/%s/duration.go mis-handles negative values; fix it and keep the public API stable.", seed, pkgs[rng.Intn(len(pkgs))])
	facts := []Fact{{"task", task}}
	msgs := []Message{
		{Role: "system", Content: Str(DefaultSystemPrompt)},
		{Role: "user", Content: Str(task)},
	}
	size := len(task)
	call := 0
	newCall := func(name string, args map[string]any) ToolCall {
		call++
		a, _ := json.Marshal(args)
		return ToolCall{ID: fmt.Sprintf("call_%d_%d", seed, call), Type: "function", Function: Function{Name: name, Arguments: string(a)}}
	}
	fileBody := func(path string, lines int) string {
		var b strings.Builder
		fmt.Fprintf(&b, "package %s\n\nimport (\n\t\"fmt\"\n\t\"strings\"\n)\n\n", strings.Split(path, "/")[1])
		for i := 0; i < lines; i++ {
			switch i % 9 {
			case 0:
				fmt.Fprintf(&b, "// Func%d handles case %d of the %s flow.\nfunc Func%d(in string) (string, error) {\n", i, i, path, i)
			case 8:
				b.WriteString("}\n\n")
			default:
				fmt.Fprintf(&b, "\tif strings.HasPrefix(in, %q) { return fmt.Sprint(in, %d), nil }\n", fmt.Sprint(rng.Intn(1000)), rng.Intn(100))
			}
		}
		return b.String()
	}
	turn := 0
	for size < targetChars {
		turn++
		path := fmt.Sprintf("pkg/%s/file%d.go", pkgs[rng.Intn(len(pkgs))], rng.Intn(40))
		var calls []ToolCall
		var results []string
		var text string
		switch k := rng.Intn(10); {
		case k == 0 && turn > 3:
			f := fmt.Sprintf("follow-up %d: also make sure %s keeps working", turn, path)
			msgs = append(msgs, Message{Role: "user", Content: Str(f)})
			size += len(f)
			continue
		case k <= 3:
			text = "Let me read the relevant files."
			n := 1 + rng.Intn(2)
			for i := 0; i < n; i++ {
				p := fmt.Sprintf("pkg/%s/file%d.go", pkgs[rng.Intn(len(pkgs))], rng.Intn(40))
				calls = append(calls, newCall("read_file", map[string]any{"path": p}))
				results = append(results, fileBody(p, 20+rng.Intn(180)))
			}
		case k <= 5:
			text = "Search for the callers."
			pat := fmt.Sprintf("Func%d", rng.Intn(50))
			calls = append(calls, newCall("grep", map[string]any{"pattern": pat, "path": "pkg/"}))
			var b strings.Builder
			for i := 0; i < 5+rng.Intn(40); i++ {
				fmt.Fprintf(&b, "pkg/%s/file%d.go:%d:\treturn %s(in)\n", pkgs[rng.Intn(len(pkgs))], rng.Intn(40), rng.Intn(500), pat)
			}
			results = append(results, b.String())
		case k <= 7:
			text = "Run the tests."
			calls = append(calls, newCall("bash", map[string]any{"command": "go test ./..."}))
			var b strings.Builder
			failing := fmt.Sprintf("TestParseDuration_Case%d", turn)
			errLine := fmt.Sprintf("duration_test.go:%d: got -%ds, want %ds (turn %d)", 10+rng.Intn(300), rng.Intn(90), rng.Intn(90), turn)
			for i := 0; i < 10+rng.Intn(90); i++ {
				fmt.Fprintf(&b, "=== RUN   TestOther%d\n--- PASS: TestOther%d (0.00s)\n", i, i)
			}
			fmt.Fprintf(&b, "--- FAIL: %s (0.01s)\n    %s\nFAIL\nexit status 1\nFAIL\tpkg/parser\t0.123s\n", failing, errLine)
			results = append(results, b.String())
			facts = append(facts, Fact{"failing-test", failing}, Fact{"error", errLine})
		default:
			text = fmt.Sprintf("I will change %s because the sign is dropped before the unit is parsed (decision %d).", path, turn)
			facts = append(facts, Fact{"edited-path", path}, Fact{"decision", fmt.Sprintf("decision %d", turn)})
			calls = append(calls, newCall("edit_file", map[string]any{"path": path, "old_str": "return d", "new_str": "return -d"}))
			results = append(results, "The file "+path+" has been edited.")
		}
		msgs = append(msgs, Message{Role: "assistant", Content: Str(text), ToolCalls: calls})
		size += len(text)
		for i, c := range calls {
			msgs = append(msgs, Message{Role: "tool", ToolCallID: c.ID, Content: Str(results[i])})
			size += len(results[i]) + len(c.Function.Arguments)
		}
	}
	s, _ := finish("synthetic", msgs)
	s.Name = fmt.Sprintf("synthetic-%d-%dk", seed, targetChars/1000)
	return s, facts
}

var (
	// errorLine matches what a runtime, a compiler or a test runner prints
	// when something went wrong — not code that mentions errors.
	errorLine  = regexp.MustCompile(`^(?:\w+(?:\.\w+)*(?:Error|Exception)(?::|$)|Traceback \(most recent call last\)|FAILED\s|--- FAIL:|FAIL:\s|E\s{2,}\S|panic:|fatal error:|\S+:\d+(?::\d+)?:\s*(?:fatal\s+)?error:|error(?:\[\w+\])?:\s)`)
	lineNumber = regexp.MustCompile(`^\s*\d+(?:→|\t|[:-])`)
	readCall   = regexp.MustCompile(`(?i)("name":\s*"(read|view|open)|\b(cat|head|tail|nl|less|sed -n|grep|rg|find)\b)`)
	pathArg    = regexp.MustCompile(`"(?:file_path|path|filename)"\s*:\s*"([^"]{3,200})"`)
)

// DetectFacts finds facts a real session carries that condensing should
// keep: the task (first user message, first line), the error lines that
// commands printed (runtime errors, compiler errors, failing tests — at most
// 3 per output, 8 to 160 characters, not from file reads or searches, where
// "error" is just code) and the file paths named in tool-call arguments.
func DetectFacts(s *Session) []Fact {
	var facts []Fact
	seen := map[string]bool{}
	calls := map[string]string{} // call id -> the call, as JSON
	for _, m := range s.Messages {
		for _, c := range m.ToolCalls {
			b, _ := json.Marshal(c.Function)
			calls[c.ID] = string(b)
		}
	}
	add := func(kind, text string) {
		text = strings.TrimSpace(text)
		if len(text) < 8 || len(text) > 160 || seen[text] {
			return
		}
		seen[text] = true
		facts = append(facts, Fact{kind, text})
	}
	for i, m := range s.Messages {
		switch {
		case m.Role == "user" && i == 1 && m.Content != nil:
			first, _, _ := strings.Cut(strings.TrimSpace(*m.Content), "\n")
			add("task", first)
		case m.Role == "tool" && m.Content != nil && !readCall.MatchString(calls[m.ToolCallID]):
			n := 0
			for _, l := range strings.Split(*m.Content, "\n") {
				t := strings.TrimSpace(l)
				if !lineNumber.MatchString(l) && errorLine.MatchString(t) && n < 3 {
					add("error", t)
					n++
				}
			}
		case m.Role == "assistant":
			for _, c := range m.ToolCalls {
				for _, p := range pathArg.FindAllStringSubmatch(c.Function.Arguments, 5) {
					add("path", p[1])
				}
			}
		}
	}
	return facts
}

var (
	// editName matches a tool that changes files (Edit, MultiEdit, Write,
	// str_replace_editor, edit_file, apply_patch…); viewCommand the
	// arguments of such a tool asked to show a file only.
	editName    = regexp.MustCompile(`(?i)edit|write|patch|replace|create|insert`)
	todoName    = regexp.MustCompile(`(?i)todo`)
	viewCommand = regexp.MustCompile(`"command"\s*:\s*"view"`)
	// editCommand matches a shell command that changes files.
	editCommand = regexp.MustCompile(`\bsed\s+(?:-\w+\s+)*-i|\bcat\s*(?:<<\s*'?\w+'?\s*)?>\s*\S|\btee\s|\bgit\s+apply\b|\bpatch\s+-|\bperl\s+-\w*i|(?m)^\s*(?:edit\s+\d+:\d+|create\s+\S)`)
	// sentenceEnd ends a sentence.
	sentenceEnd = regexp.MustCompile(`[.!?:](?:\s+|$)`)
)

// DetectDecisions finds the decisions a real session's agent announced:
// the first sentence (of at least minDecision characters, at most 160, in
// the first line) of the text of each assistant message whose tool calls
// change a file (an edit tool, not a to-do list's; a shell command that
// writes: sed -i, cat >, tee, git apply, patch, SWE-agent's edit and
// create). Its kind is "decision".
func DetectDecisions(s *Session) []Fact {
	var facts []Fact
	seen := map[string]bool{}
	for _, m := range s.Messages {
		if m.Role != "assistant" || m.Content == nil || !editsFiles(m.ToolCalls) {
			continue
		}
		first := announced(*m.Content)
		if first == "" || seen[first] {
			continue
		}
		seen[first] = true
		facts = append(facts, Fact{"decision", first})
	}
	return facts
}

// minDecision is the length from which a sentence says what the agent
// decides ("Interesting!" or "Let me be more specific:" do not).
const minDecision = 30

// announced returns the first sentence of text's first line of at least
// minDecision characters, up to 160; "" when there is none.
func announced(text string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(text), "\n")
	line = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(line), "THOUGHT:"))
	for line != "" {
		sentence, rest := line, ""
		if loc := sentenceEnd.FindStringIndex(line); loc != nil {
			sentence, rest = line[:loc[0]+1], line[loc[1]:]
		}
		if len(sentence) >= minDecision {
			if len(sentence) > 160 {
				return ""
			}
			return sentence
		}
		line = rest
	}
	return ""
}

// editsFiles reports whether one of calls changes a file.
func editsFiles(calls []ToolCall) bool {
	for _, c := range calls {
		name, args := c.Function.Name, c.Function.Arguments
		if editName.MatchString(name) && !todoName.MatchString(name) && !viewCommand.MatchString(args) {
			return true
		}
		var a struct {
			Command string `json:"command"`
			Cmd     string `json:"cmd"`
		}
		if json.Unmarshal([]byte(args), &a) == nil && editCommand.MatchString(a.Command+"\n"+a.Cmd) {
			return true
		}
	}
	return false
}

// WithReasoning returns a copy of s whose assistant messages carry a
// recorded reasoning text of about 60–240 words (seeded), so its Responses
// form has reasoning items and its Messages form thinking blocks, as the
// sessions of reasoning models do.
func WithReasoning(s *Session, seed int64) *Session {
	rng := rand.New(rand.NewSource(seed))
	out := *s
	out.Name = s.Name + "-reasoning"
	out.Messages = append([]Message(nil), s.Messages...)
	words := []string{"the", "test", "fails", "because", "sign", "is", "dropped", "before", "parsing", "unit", "so", "I", "should",
		"check", "callers", "first", "then", "edit", "file", "and", "rerun", "suite", "maybe", "negative", "values", "handled", "later"}
	for i, m := range out.Messages {
		if m.Role != "assistant" {
			continue
		}
		n := 60 + rng.Intn(180)
		var b strings.Builder
		for j := 0; j < n; j++ {
			if j > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(words[rng.Intn(len(words))])
		}
		fmt.Fprintf(&b, " (thought %d).", i)
		out.Messages[i].Reasoning = b.String()
	}
	return &out
}

// ClaudeLog renders a chat-form session as a Claude Code session log
// (format F3, one JSON line per message): assistant messages as thinking
// (when the message has reasoning), text and tool_use blocks, tool
// results as user lines of tool_result blocks. ClaudeMessages of it is the
// session in Claude Code's native Messages form.
func ClaudeLog(s *Session) []byte {
	var b strings.Builder
	line := func(typ, id string, content any) {
		msg := map[string]any{"role": typ, "content": content}
		if id != "" {
			msg["id"] = id
			msg["model"] = "claude-sonnet-4-5"
		}
		l, _ := json.Marshal(map[string]any{"type": typ, "message": msg})
		b.Write(l)
		b.WriteByte('\n')
	}
	for i, m := range s.Messages {
		text := ""
		if m.Content != nil {
			text = *m.Content
		}
		switch m.Role {
		case "system", "developer":
			// Claude Code sends its own system prompt; the session's
			// instructions reach the model in the first user message.
		case "user":
			line("user", "", text)
		case "tool":
			line("user", "", []any{map[string]any{"type": "tool_result", "tool_use_id": m.ToolCallID, "content": text}})
		case "assistant":
			var blocks []any
			if m.Reasoning != "" {
				blocks = append(blocks, map[string]any{"type": "thinking", "thinking": m.Reasoning, "signature": "x"})
			}
			if strings.TrimSpace(text) != "" {
				blocks = append(blocks, map[string]any{"type": "text", "text": text})
			}
			for _, c := range m.ToolCalls {
				var in any = map[string]any{}
				json.Unmarshal([]byte(c.Function.Arguments), &in)
				blocks = append(blocks, map[string]any{"type": "tool_use", "id": c.ID, "name": c.Function.Name, "input": in})
			}
			if len(blocks) > 0 {
				line("assistant", fmt.Sprintf("msg_%d", i), blocks)
			}
		}
	}
	return []byte(b.String())
}
