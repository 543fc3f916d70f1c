package scripted

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/condense-proxy/condense-proxy/codec/responses"
	"github.com/condense-proxy/condense-proxy/view"
)

// answer is what the model answers, in no API's shape yet.
type answer struct {
	id    string // random, for the answer's and its items' ids
	model string
	text  string
	// call is the tool call the answer makes (nil: none).
	call *call
	// compaction, if set, makes a Responses answer one compaction item
	// carrying this summary (the answer to a compaction_trigger).
	compaction                string
	inputTokens, outputTokens int
	// cacheRead and cacheWrite are the prompt's tokens read from and
	// written to the prompt cache (promptcache.go).
	cacheRead, cacheWrite int
}

// call is one tool call.
type call struct {
	id, name string
	args     string // JSON object
}

// stopped reports whether the answer ends the turn (no tool call).
func (a answer) stopped() bool { return a.call == nil }

// Steps of a turn: the model lists the directory, then reads a file it
// listed, then reports.
const (
	stepList = iota
	stepRead
	stepReport
)

// answer makes the model's answer to a parsed request of api.
func (u *Upstream) answer(api view.Codec, r *view.Request) answer {
	a := answer{id: randomHex(12), inputTokens: r.Total}
	texts := make([]view.Text, len(r.Items))
	for i := range r.Items {
		texts[i] = api.Text(r, i)
	}
	limit := summaryLimit(maxAnswer(r.Body))
	if s, ok := summaryAsked(texts, limit); ok {
		a.text = s
		return a
	}
	switch {
	case r.Compaction == responses.CompactionTrigger:
		a.compaction = summarize(entriesOf(texts), limit)
		return a
	case r.Compaction != "":
		// The agent compacts its own history: its prompt asks for the
		// summary in <summary> tags (Claude Code), or as text.
		a.text = "<summary>\n" + summarize(entriesOf(texts), limit) + "\n</summary>"
		return a
	}
	step, results := turn(texts)
	if step < stepReport && r.Parsed {
		// (An unparsed conversation shows no calls: a call would be
		// made again and again.)
		if c, text, ok := shellCall(api.Format(), offeredTools(r.Body), step, results); ok {
			a.text, a.call = text, c
			return a
		}
	}
	a.text = report(texts, results, r.Total)
	return a
}

// maxCalls bounds the model's calls in one conversation, whatever its
// turns: past it, it only answers text (no agent loops forever on it).
const maxCalls = 20

// reminder matches the system reminders agents put in user messages.
var reminder = regexp.MustCompile(`(?s)<system-reminder>.*?</system-reminder>`)

// isPrompt reports whether an item is the user's prompt: a user message
// with text of its own (not only tool results or system reminders).
func isPrompt(t view.Text) bool {
	return t.Role == view.RoleUser && len(t.Results) == 0 && strings.TrimSpace(reminder.ReplaceAllString(t.Text, "")) != ""
}

// callStep reads the step a call id of the model carries ("…scripted1_…").
var callStep = regexp.MustCompile(`scripted(\d)_`)

// turn returns the step the current turn is at — one past the newest call
// the model made since the user's last prompt — and the results of the
// model's calls in it, by step.
func turn(texts []view.Text) (step int, results map[int]string) {
	prompt, made := -1, 0
	for i, t := range texts {
		if isPrompt(t) {
			prompt = i
		}
		for _, c := range t.Calls {
			if callStep.MatchString(c.ID) {
				made++
			}
		}
	}
	if made >= maxCalls {
		return stepReport, nil
	}
	steps := map[string]int{}
	results = map[int]string{}
	for _, t := range texts[prompt+1:] {
		for _, c := range t.Calls {
			if m := callStep.FindStringSubmatch(c.ID); m != nil {
				n, _ := strconv.Atoi(m[1])
				steps[c.ID] = n
				step = max(step, n+1)
			}
		}
		for _, res := range t.Results {
			if n, ok := steps[res.CallID]; ok {
				results[n] = res.Text
			}
		}
	}
	return step, results
}

// shellTools are the shell tools the model calls, by the name agents give
// them: Claude Code, Codex, qwen-code, then generic names.
var shellTools = []string{"Bash", "exec_command", "run_shell_command", "shell", "shell_command", "bash", "execute_command"}

// shellCall returns the call of the given step through the first shell
// tool offered, and the text said with it; ok is false when none is
// offered or the step has nothing to run (no file listed to read).
func shellCall(format string, tools []tool, step int, results map[int]string) (c *call, text string, ok bool) {
	var sh *tool
	for _, name := range shellTools {
		for i := range tools {
			if tools[i].name == name {
				sh = &tools[i]
				break
			}
		}
		if sh != nil {
			break
		}
	}
	if sh == nil {
		return nil, "", false
	}
	var cmd string
	switch step {
	case stepList:
		cmd, text = "ls", "Let me look at the working directory first."
	case stepRead:
		f := pickFile(results[stepList])
		if f == "" {
			return nil, "", false
		}
		cmd, text = "head -n 20 "+f, "Now the beginning of "+f+"."
	default:
		return nil, "", false
	}
	args := map[string]any{}
	switch {
	case sh.props["cmd"] != "":
		args["cmd"] = cmd
	case sh.props["command"] == "array":
		args["command"] = []string{"bash", "-lc", cmd}
	case sh.props["command"] != "":
		args["command"] = cmd
		if sh.props["description"] != "" {
			args["description"] = "Run " + cmd
		}
	default:
		return nil, "", false
	}
	b, _ := json.Marshal(args)
	prefix := "call_"
	if format == "messages" {
		prefix = "toolu_"
	}
	return &call{id: fmt.Sprintf("%sscripted%d_%s", prefix, step, randomHex(8)), name: sh.name, args: string(b)}, text, true
}

// fileName is a plain file name as ls prints it.
var fileName = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.-]*\.[A-Za-z0-9]+$`)

// listing returns the lines of a command's output: the output itself
// when the tool wraps it — Codex's exec_command puts a header before
// "Output:"; Gemini CLI's run_shell_command writes "Output: " before the
// first line and fields (Exit Code: …) after the last, in tags.
func listing(out string) []string {
	if i := strings.Index(out, "Output:"); i >= 0 && (i == 0 || out[i-1] == '\n') {
		out = out[i+len("Output:"):]
	}
	var lines []string
	for _, l := range strings.Split(out, "\n") {
		l = strings.TrimSpace(l)
		if toolField.MatchString(l) {
			break
		}
		if l != "" && !tagLine.MatchString(l) {
			lines = append(lines, l)
		}
	}
	return lines
}

var (
	// toolField is a field a shell tool writes after a command's output.
	toolField = regexp.MustCompile(`^(?:Error|Exit Code|Signal|Background PIDs|Process Group PGID): `)
	tagLine   = regexp.MustCompile(`^</?[\w-]+>$`)
)

// pickFile returns a file of an ls output to read: a README first, else
// the first file with an extension.
func pickFile(ls string) string {
	first := ""
	for _, l := range listing(ls) {
		if !fileName.MatchString(l) {
			continue
		}
		if strings.HasPrefix(strings.ToLower(l), "readme") {
			return l
		}
		if first == "" {
			first = l
		}
	}
	return first
}

// report is the answer that ends a turn: what the calls found, or, with
// none, a greeting that says what the demo does.
func report(texts []view.Text, results map[int]string, tokens int) string {
	var b strings.Builder
	ls, listed := results[stepList]
	if !listed {
		prompt := ""
		for i := len(texts) - 1; i >= 0; i-- {
			if isPrompt(texts[i]) {
				prompt = firstLine(reminder.ReplaceAllString(texts[i].Text, ""))
				break
			}
		}
		fmt.Fprintf(&b, "Hello from the condense-proxy demo's scripted model (no LLM). Your request reached me as %d items, %d tokens", len(texts), tokens)
		if prompt != "" {
			fmt.Fprintf(&b, "; its last prompt: “%s”", clip(prompt, 120))
		}
		b.WriteString(". Give me a shell tool (Claude Code, Codex, qwen-code do) and I list the directory and read a file before I answer; the proxy's live page shows what it condensed on the way.")
		return b.String()
	}
	entries := listing(ls)
	fmt.Fprintf(&b, "The working directory holds %d entries", len(entries))
	if len(entries) > 0 {
		shown := entries[:min(len(entries), 8)]
		fmt.Fprintf(&b, ": %s", strings.Join(shown, ", "))
		if len(entries) > len(shown) {
			b.WriteString(", …")
		}
	}
	b.WriteString(".")
	if head, ok := results[stepRead]; ok {
		lines := listing(head)
		fmt.Fprintf(&b, " %s begins:\n\n", pickFile(ls))
		for _, l := range lines[:min(len(lines), 5)] {
			b.WriteString("    " + clip(l, 120) + "\n")
		}
	}
	b.WriteString("\nDone: that was the demo's scripted model (no LLM), through condense-proxy; its live page shows what was condensed.")
	return b.String()
}

// firstLine is the first line of s that is not blank or a tag.
func firstLine(s string) string {
	for _, l := range strings.Split(s, "\n") {
		l = strings.TrimSpace(l)
		if l != "" && !strings.HasPrefix(l, "<") {
			return l
		}
	}
	return ""
}

// clip shortens s to at most n runes, marking the cut.
func clip(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

func randomHex(n int) string {
	b := make([]byte, n/2)
	rand.Read(b)
	return hex.EncodeToString(b)
}
