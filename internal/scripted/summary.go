package scripted

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/condense-proxy/condense-proxy/view"
)

// The marks of condense-proxy's summarizer calls (condense.UserPrompt,
// and the instruction of a summary asked in place, condense/inplace.go):
// a test keeps them in step with the condense package.
const (
	inPlaceOpening = "You are the condense-proxy summarizer."
	transcriptOpen = "<transcript>\n"
	transcriptEnd  = "\n</transcript>"
	summariesOpen  = "<summaries>\n"
	summariesEnd   = "\n</summaries>"
)

// inPlaceSpan reads which messages a summary asked in place covers
// (counting the first as 1).
var inPlaceSpan = regexp.MustCompile(`Summarize messages (\d+) to (\d+) of this conversation`)

// entry is one message of a conversation to summarize, as text.
type entry struct {
	role    string
	text    string
	calls   []string // "name(args)"
	results []string
}

// summaryAsked returns the summary a summarizer call asks for; ok is
// false when the request is not one.
func summaryAsked(texts []view.Text, limit int) (string, bool) {
	if len(texts) == 0 {
		return "", false
	}
	last := texts[len(texts)-1].Text
	if i := strings.Index(last, inPlaceOpening); i >= 0 {
		m := inPlaceSpan.FindStringSubmatch(last[i:])
		if m == nil {
			return summarize(nil, limit), true
		}
		a, _ := strconv.Atoi(m[1])
		b, _ := strconv.Atoi(m[2])
		a, b = max(a, 1), min(b, len(texts))
		if a > b {
			return summarize(nil, limit), true
		}
		span := append([]view.Text(nil), texts[a-1:b]...)
		if b == len(texts) {
			// The instruction was appended to the last message itself.
			span[len(span)-1].Text = last[:i]
		}
		return summarize(entriesOf(span), limit), true
	}
	if t, ok := between(last, summariesOpen, summariesEnd); ok {
		return merge(t, limit), true
	}
	if t, ok := between(last, transcriptOpen, transcriptEnd); ok {
		return summarize(parseTranscript(t), limit), true
	}
	return "", false
}

// between returns the text of s between open and the last end after it.
func between(s, open, end string) (string, bool) {
	i := strings.Index(s, open)
	if i < 0 {
		return "", false
	}
	s = s[i+len(open):]
	j := strings.LastIndex(s, end)
	if j < 0 {
		return "", false
	}
	return s[:j], true
}

// entriesOf turns a conversation's texts into entries.
func entriesOf(texts []view.Text) []entry {
	out := make([]entry, 0, len(texts))
	for _, t := range texts {
		e := entry{role: t.Role, text: t.Text}
		for _, c := range t.Calls {
			e.calls = append(e.calls, c.Name+"("+c.Args+")")
		}
		for _, r := range t.Results {
			e.results = append(e.results, r.Text)
		}
		out = append(out, e)
	}
	return out
}

// transcriptHead matches the lines that open an entry of a summarizer
// transcript ("[user]", "[tool result ID]", "[tool call ID] name(args)").
var transcriptHead = regexp.MustCompile(`^\[(user|assistant|system|developer|tool|tool result [^\]]*|tool call [^\]]*)\](.*)$`)

// parseTranscript reads a summarizer transcript back into entries.
func parseTranscript(t string) []entry {
	var out []entry
	var cur *entry
	for _, line := range strings.Split(t, "\n") {
		m := transcriptHead.FindStringSubmatch(line)
		switch {
		case m == nil:
			if cur != nil {
				if n := len(cur.results); n > 0 && cur.role == "tool" {
					cur.results[n-1] += line + "\n"
				} else {
					cur.text += line + "\n"
				}
			}
		case strings.HasPrefix(m[1], "tool call "):
			if cur != nil {
				cur.calls = append(cur.calls, strings.TrimSpace(m[2]))
			}
		case strings.HasPrefix(m[1], "tool result "):
			out = append(out, entry{role: "tool", results: []string{""}})
			cur = &out[len(out)-1]
		default:
			out = append(out, entry{role: m[1]})
			cur = &out[len(out)-1]
		}
	}
	return out
}

// filePath matches paths and file names in text.
var filePath = regexp.MustCompile(`(?:[\w.-]*/)+[\w.-]+\.\w+|\b[\w-]+\.(?:go|py|js|ts|tsx|jsx|rs|java|c|h|cc|cpp|rb|sh|md|txt|json|yaml|yml|toml|mod|sum|sql|html|css|lock|cfg|ini|log)\b`)

// errorLine matches a line reporting an error.
var errorLine = regexp.MustCompile(`(?i)\b(error|errors|fail|failed|failure|panic|exception|traceback|fatal)\b`)

// digest is what a summary says: the sections of the summarizer prompt,
// filled with lines taken from the messages.
type digest struct {
	task                 string
	msgs, calls, results int
	ran, files, errs     []string
	next                 string
}

// addFiles adds the paths named in s (at most 12 in all).
func (d *digest) addFiles(s string) {
	for _, f := range filePath.FindAllString(s, -1) {
		if len(d.files) < 12 && !slices.Contains(d.files, f) {
			d.files = append(d.files, f)
		}
	}
}

// addErrors adds the lines of s that report an error (at most 3 in all).
func (d *digest) addErrors(s string) {
	for _, l := range strings.Split(s, "\n") {
		if l = clip(strings.TrimSpace(l), 120); errorLine.MatchString(l) && len(d.errs) < 3 && !slices.Contains(d.errs, l) {
			d.errs = append(d.errs, l)
		}
	}
}

// summarize writes the summarizer prompt's sections from entries, in at
// most limit bytes.
func summarize(es []entry, limit int) string {
	d := digest{msgs: len(es)}
	var lastUser, lastSaid string
	for _, e := range es {
		switch line := firstLine(e.text); {
		case e.role == view.RoleUser && line != "" && d.task == "":
			d.task = line
		case e.role == view.RoleUser && line != "":
			lastUser = line
		case e.role == view.RoleAssistant && line != "":
			lastSaid = line
		}
		for _, c := range e.calls {
			d.calls++
			d.ran = append(d.ran, c)
			d.addFiles(c)
		}
		for _, r := range e.results {
			d.results++
			d.addFiles(r)
			d.addErrors(r)
		}
		d.addFiles(e.text)
	}
	switch {
	case lastUser != "":
		d.next = "answer the latest request: " + lastUser
	case lastSaid != "":
		d.next = "go on from the assistant's last words: " + lastSaid
	}
	return d.render(limit)
}

// noTask and the other fillers are what a section says when the messages
// give it nothing.
const (
	noTask    = "continue the task the earlier messages set"
	noFiles   = "none named"
	noErrors  = "none seen"
	noNext    = "continue from the newest messages"
	decisions = "none recorded (scripted model: lines of the messages)"
)

// progress reads and writes the progress bullet.
var progress = regexp.MustCompile(`^- (\d+) messages summarized: (\d+) tool calls, (\d+) tool results`)

// render writes d's sections, in at most limit bytes: each bullet
// clipped, the commands run dropped first when they do not fit.
func (d digest) render(limit int) string {
	for _, ran := range []int{2, 0} {
		var b strings.Builder
		section := func(title string, bullets ...string) {
			b.WriteString("## " + title + "\n")
			for _, s := range bullets {
				b.WriteString("- " + clip(strings.TrimSpace(s), 160) + "\n")
			}
		}
		section("Task and intent", or(d.task, noTask))
		state := []string{fmt.Sprintf("%d messages summarized: %d tool calls, %d tool results", d.msgs, d.calls, d.results)}
		for _, c := range d.ran[max(0, len(d.ran)-ran):] {
			state = append(state, "ran "+clip(c, 100))
		}
		section("Current state and progress", state...)
		section("Decisions and reasons", decisions)
		section("Files and code (every path, and what was read or changed in it)", or(strings.Join(d.files, ", "), noFiles))
		section("Errors and how they were resolved", or(strings.Join(d.errs, "; "), noErrors))
		section("Pending work and next steps", or(d.next, noNext))
		if out := strings.TrimSpace(b.String()); len(out) <= limit || ran == 0 {
			return cut(out, limit)
		}
	}
	return ""
}

func or(s, otherwise string) string {
	if s == "" {
		return otherwise
	}
	return s
}

// merge merges consecutive summaries into one: the first task, the
// counts added up, the paths and errors of all, the last next step. Text
// of other shapes (an extractive summary) gives its paths.
func merge(summaries string, limit int) string {
	var d digest
	title := ""
	for _, line := range strings.Split(summaries, "\n") {
		line = strings.TrimSpace(line)
		if t, ok := strings.CutPrefix(line, "## "); ok {
			title = t
			continue
		}
		bullet, ok := strings.CutPrefix(line, "- ")
		switch {
		case !ok:
			d.addFiles(line)
		case strings.HasPrefix(title, "Task"):
			if d.task == "" && bullet != noTask {
				d.task = bullet
			}
		case strings.HasPrefix(title, "Current state"):
			if m := progress.FindStringSubmatch(line); m != nil {
				n, _ := strconv.Atoi(m[1])
				c, _ := strconv.Atoi(m[2])
				r, _ := strconv.Atoi(m[3])
				d.msgs, d.calls, d.results = d.msgs+n, d.calls+c, d.results+r
			} else if c, ok := strings.CutPrefix(bullet, "ran "); ok {
				d.ran = append(d.ran, c)
			}
		case strings.HasPrefix(title, "Files"):
			if bullet != noFiles {
				d.addFiles(bullet)
			}
		case strings.HasPrefix(title, "Errors"):
			if bullet != noErrors {
				d.addErrors(bullet)
			}
		case strings.HasPrefix(title, "Pending"):
			if bullet != noNext {
				d.next = bullet
			}
		case !strings.HasPrefix(title, "Decisions"):
			d.addFiles(bullet)
		}
	}
	return d.render(limit)
}

// summaryLimit is the size of a summary, in bytes, for an answer bound
// of maxTokens (0: none): about three bytes a token, within [200, 4000].
func summaryLimit(maxTokens int) int {
	if maxTokens <= 0 {
		return 2000
	}
	return min(max(3*maxTokens, 200), 4000)
}

// cut shortens s to at most n bytes, at a line's end.
func cut(s string, n int) string {
	s = strings.TrimSpace(s)
	if len(s) <= n {
		return s
	}
	if i := strings.LastIndexByte(s[:n], '\n'); i > 0 {
		return s[:i]
	}
	return strings.ToValidUTF8(s[:n], "")
}
