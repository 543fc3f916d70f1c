package condense

import (
	"fmt"
	"path"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/tidwall/gjson"

	"github.com/condense-proxy/condense-proxy/logfacts"
	"github.com/condense-proxy/condense-proxy/selective"
	"github.com/condense-proxy/condense-proxy/view"
)

// Extractive summaries are built without an LLM: deterministic, cheap, and
// the fallback whenever the LLM summarizer fails.

const (
	userChars      = 300
	assistantChars = 240
	resultChars    = 160
	maxErrorLines  = 3
	maxFiles       = 20
)

// fitSummary bounds an extractive summary to about maxTokens (3 bytes a
// token is a safe estimate for this text) — factTokens (at least
// maxTokens) for its facts. A summary over maxTokens keeps what the agent
// needs, rank by rank: its Files section (a third of the fact room at
// most), the user's words (the task), every distinct error line commands
// printed (with its result's tool and exit status: errorHead) and the
// assistant's decisions (its words where its calls change files), within
// factTokens; then the assistant's other words (and any
// other text: an LLM summary's lines, when summaries are merged), within
// maxTokens; never the calls or the other results, whose originals the
// summary's id and the recall tool keep. Each kept line stays in the
// order it came, and what was left out is counted on one line that says
// where the originals are.
func fitSummary(text string, maxTokens, factTokens int) string {
	maxChars, factChars := maxTokens*3, max(factTokens, maxTokens)*3
	if len(text) <= maxChars {
		return text
	}
	body, files, hasFiles := strings.Cut(text, "## Files\n")
	if hasFiles {
		files = "## Files\n" + files
		if len(files) > factChars/3 {
			files = shorten(files, factChars/3) + "\n"
		}
	}
	// The lines of body, each read where it is: line i is
	// body[starts[i] : starts[i+1]-1].
	body = strings.TrimRight(body, "\n")
	n := strings.Count(body, "\n") + 1
	starts := make([]int32, 0, n+1)
	ranks := make([]int8, n)
	for i, at := 0, 0; i < n; i++ {
		starts = append(starts, int32(at))
		end := strings.IndexByte(body[at:], '\n')
		if end < 0 {
			end = len(body) - at
		}
		ranks[i] = int8(lineRank(body[at : at+end]))
		at += end + 1
	}
	starts = append(starts, int32(len(body)+1))
	line := func(i int) string { return body[starts[i] : starts[i+1]-1] }
	const omitted = "[… %d lines of calls and results omitted: their originals are behind this summary's id …]\n"
	fixed := len(files) + len(omitted)
	keep, shortened, kept := chooseLines(n, ranks, line, factChars-fixed, maxChars-fixed)
	var b strings.Builder
	b.Grow(kept + len(omitted) + len(files))
	dropped := 0
	for i := range n {
		if keep[i] {
			if l, ok := shortened[i]; ok {
				b.WriteString(l)
			} else {
				b.WriteString(line(i))
			}
			b.WriteByte('\n')
		} else {
			dropped++
		}
	}
	if dropped > 0 {
		fmt.Fprintf(&b, omitted, dropped)
	}
	b.WriteString(files)
	return b.String()
}

// chooseLines picks which of a summary's n lines (line(i), ranked ranks)
// fit, rank by rank — the facts (ranks up to decisionRank) in room, the
// assistant's other words while all kept fit say, nothing of a lower
// rank — and returns them (keep), the error results kept as newErrors
// shortens them (shortened) and their size in bytes: an error
// line repeated step after step is kept once — a result keeps the ones
// not kept above it, or goes.
func chooseLines(n int, ranks []int8, line func(int) string, room, say int) (keep []bool, shortened map[int]string, kept int) {
	keep, shortened = make([]bool, n), map[int]string{}
	seen := map[string]bool{}
	for rank := int8(0); rank <= assistantRank; rank++ {
		if rank == assistantRank {
			room = min(room, say-kept)
		}
		for i := range n {
			if keep[i] || ranks[i] != rank {
				continue
			}
			l := line(i)
			var errs []string
			if rank == errorRank {
				if l, errs = newErrors(l, seen); l == "" {
					continue
				}
			}
			if len(l)+1 > room {
				continue
			}
			for _, e := range errs {
				seen[e] = true
			}
			if l != line(i) {
				shortened[i] = l
			}
			keep[i] = true
			kept += len(l) + 1
			room -= len(l) + 1
		}
	}
	return keep, shortened, kept
}

// The ranks of an extractive summary's lines: what fitSummary keeps
// first.
const (
	userRank      = 0 // the user's words: the task and its changes
	errorRank     = 1 // a result with error lines or a failing exit status
	decisionRank  = 2 // the assistant's words where its calls change files
	assistantRank = 3 // the assistant's other words, and any other text (a summary's, a note's)
	callRank      = 4 // a call: its paths are in the Files section
	resultRank    = 5 // a result without an error
)

func lineRank(l string) int {
	t := strings.TrimSpace(l)
	switch {
	case strings.HasPrefix(t, "- User:"), strings.HasPrefix(t, "- System note:"):
		return userRank
	case strings.HasPrefix(t, "→ "):
		if strings.Contains(t, " | ! ") || (strings.Contains(t, " | exit ") && !strings.Contains(t, " | exit 0 |")) {
			return errorRank
		}
		return resultRank
	case strings.HasPrefix(t, "- Decision:"):
		return decisionRank
	case strings.HasPrefix(t, "- Assistant:"):
		return assistantRank
	case strings.HasPrefix(t, "- called "):
		return callRank
	}
	return assistantRank
}

// newErrors returns result line l without the error lines seen holds
// ("! …" parts), its line count and a first line that is no error
// (errorHead), and the error lines it adds (what seen takes when l is
// kept); "" when none of its errors is new.
func newErrors(l string, seen map[string]bool) (string, []string) {
	head, rest, ok := strings.Cut(l, " | ! ")
	if !ok {
		// A failing exit status alone: the line is its error.
		if t := strings.TrimSpace(l); !seen[t] {
			return l, []string{t}
		}
		return "", nil
	}
	parts := strings.Split("! "+rest, " | ")
	kept := parts[:0]
	var fresh []string
	for _, p := range parts {
		switch {
		case !strings.HasPrefix(p, "! "):
			if !strings.HasSuffix(p, " lines)") {
				kept = append(kept, p)
			}
		case !seen[p]:
			kept = append(kept, p)
			fresh = append(fresh, p)
		}
	}
	if len(fresh) == 0 {
		return "", nil
	}
	return errorHead(head) + " | " + strings.Join(kept, " | "), fresh
}

// errorHead is the head of a result kept for its error lines ("→ tool:
// first line"): the tool's name, and the first line only when it is an
// error itself or names a digest (its id recalls the original).
func errorHead(head string) string {
	at := strings.Index(head, "→ ")
	if at < 0 {
		return head
	}
	name, first, ok := strings.Cut(head[at:], ": ")
	if !ok {
		return head
	}
	exit := ""
	if i := strings.LastIndex(first, " | exit "); i >= 0 {
		first, exit = first[:i], first[i:]
	}
	if strings.HasPrefix(first, digestRef) || logfacts.IsKey(first) {
		return head
	}
	return head[:at] + name + exit
}

// digestRef begins a result's first line that names a digest (written by
// resultDigest, read by errorHead).
const digestRef = "[digest "

var (
	tagLine = regexp.MustCompile(`^</?[\w-]+>$`)
	// codeLine is a line of a file as tools show it: numbered (cat -n,
	// Claude Code's Read "12→", a compiler's excerpt "12 | ").
	codeLine = regexp.MustCompile(`^\s*\d+(?:→|\t|\s+\|\s)`)
	// digestHeader is the first line of a digest (selective's marker).
	digestHeader = regexp.MustCompile(`^\[condense-proxy digest of .* — ([^,]+), original (\d+) lines, \d+ tokens; id (\S+): GET \S+\]$`)
	pathToken    = regexp.MustCompile(`(?:^|[\s'"=(])((?:\.{0,2}/)?(?:[\w.-]+/)*[\w.-]+\.[A-Za-z][\w]{0,7})(?::\d+)?`)
)

func shorten(s string, n int) string {
	s = strings.TrimSpace(s)
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && cut < len(s) && s[cut]&0xC0 == 0x80 {
		cut--
	}
	return s[:cut] + "…"
}

// oneLine joins the words of s with single spaces (strings.Fields, then
// Join): s itself when it is one line already.
func oneLine(s string) string {
	if isOneLine(s) {
		return s
	}
	return strings.Join(strings.Fields(s), " ")
}

// isOneLine reports whether s is ASCII whose words are separated by
// single spaces, with none before or after: what oneLine would return
// unchanged.
func isOneLine(s string) bool {
	space := true // a space here would be leading or doubled
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c >= utf8.RuneSelf, c == '\t', c == '\n', c == '\v', c == '\f', c == '\r':
			return false
		case c == ' ':
			if space {
				return false
			}
			space = true
		default:
			space = false
		}
	}
	return !space || s == ""
}

// writeLine writes the parts of a line, then a newline.
func writeLine(b *strings.Builder, parts ...string) {
	for _, p := range parts {
		b.WriteString(p)
	}
	b.WriteByte('\n')
}

// firstSentences returns the leading sentences of s within n bytes.
func firstSentences(s string, n int) string {
	s = oneLine(s)
	if len(s) <= n {
		return s
	}
	if i := strings.LastIndexAny(s[:n], ".!?"); i > n/3 {
		return s[:i+1]
	}
	return shorten(s, n)
}

// keyArgs picks the arguments of a tool call that say what it did.
func keyArgs(args string) string {
	a := gjson.Parse(args)
	if !a.IsObject() {
		return shorten(oneLine(args), 120)
	}
	var out []string
	for _, k := range []string{"path", "file_path", "filename", "file", "pattern", "query", "command", "cmd", "url", "old_str", "description"} {
		if v := a.Get(k); v.Exists() && v.String() != "" {
			out = append(out, k+"="+shorten(oneLine(v.String()), 120))
		}
	}
	if len(out) == 0 {
		return shorten(oneLine(args), 120)
	}
	return strings.Join(out, " ")
}

// resultDigest reduces text, a result of call, to its first line, its
// exit status and its key lines (failing tests, assertions, compiler
// errors, panics, error lines: the rules digests use, package logfacts) —
// none for a file's content (a read's output or a digest of one, as
// selective's digests tell a file from a log), whose lines are code even
// where they name an error ("func f() error").
func resultDigest(call view.Call, text string) string {
	lines := strings.Split(strings.TrimSpace(text), "\n")
	first := ""
	for _, l := range lines {
		if t := strings.TrimSpace(l); t != "" && !strings.HasPrefix(t, "<returncode>") && !tagLine.MatchString(t) {
			first = t
			break
		}
	}
	var file bool
	if m := digestHeader.FindStringSubmatch(first); m != nil {
		// A digest is named by its id (what recalls its original), not
		// by its header: the room goes to its error lines.
		first = digestRef + m[3] + ", " + m[1] + " of " + m[2] + " lines]"
		file = m[1] == selective.KindFile
	} else {
		file = selective.Classify(selective.Input{Tool: call.Name, Args: call.Args, Content: text}) == selective.KindFile
	}
	parts := []string{shorten(first, resultChars)}
	if code := logfacts.Exit(text); code != "" {
		parts = append(parts, "exit "+code)
	}
	if !file {
		n := 0
		for _, l := range logfacts.KeyLines(text, 2*(maxErrorLines+1)) {
			// A numbered line is a file's content (an edit's snippet, a
			// compiler's excerpt): code that names an error is not one.
			if l != first && !codeLine.MatchString(l) && n <= maxErrorLines {
				parts = append(parts, "! "+shorten(l, resultChars))
				n++
			}
		}
	}
	parts = append(parts, fmt.Sprintf("(%d lines)", len(lines)))
	return strings.Join(parts, " | ")
}

// fileLog collects the files a range of messages touched, most recent
// first.
type fileLog struct {
	order    []string
	kind     map[string]string // path -> read | modified | found
	sequence map[string]int
	n        int
}

func newFileLog() *fileLog {
	return &fileLog{kind: map[string]string{}, sequence: map[string]int{}}
}

// fileKinds are the kinds of a file, strongest first: one the agent
// modified, then one it named in a call, then one a tool's output only
// listed. The Files section lists them in this order.
var fileKinds = []string{"modified", "read", "found"}

// kindRank is kind's place in fileKinds; a kind it does not know (a
// merged summary's own Files lines) ranks as the strongest.
func kindRank(kind string) int { return max(slices.Index(fileKinds, kind), 0) }

// add notes path as of kind; a file keeps the strongest kind it was seen
// as, so a file the agent read is not demoted to the found ones (where
// a build log's hundreds of paths would crowd it out) when an output
// lists it again.
func (f *fileLog) add(path, kind string) {
	path = strings.Trim(path, `"'(),:;`)
	if path == "" || len(path) > 200 || strings.Contains(path, "://") {
		return
	}
	f.n++
	if old, ok := f.kind[path]; !ok {
		f.order = append(f.order, path)
		f.kind[path] = kind
	} else if kindRank(kind) < kindRank(old) {
		f.kind[path] = kind
	}
	f.sequence[path] = f.n
}

var (
	modifyTools = regexp.MustCompile(`(?i)(edit|write|create|replace|patch|insert|apply|update|delete|rename|move)`)
	searchTools = regexp.MustCompile(`(?i)(grep|glob|find|search|ls|list)`)
	modifyCmd   = regexp.MustCompile(`(?:>|sed -i|tee |mv |cp |rm |touch |patch |git apply)`)
	todoTool    = regexp.MustCompile(`(?i)todo`)
	editCmd     = regexp.MustCompile(`\bsed\s+(?:-\w+\s+)*-i|\bcat\s*(?:<<-?\s*'?\w+'?\s*)?>\s*\S|\btee\s|\bgit\s+apply\b|\bpatch\s+-|\bperl\s+-\w*i`)
)

// editsFiles reports whether calls change files: a tool that modifies
// (not a to-do list's), or a shell command that writes (sed -i, cat >,
// tee, git apply, patch, perl -i).
func editsFiles(calls []view.Call) bool {
	for _, c := range calls {
		if modifyTools.MatchString(c.Name) && !todoTool.MatchString(c.Name) {
			return true
		}
		a := gjson.Parse(c.Args)
		for _, k := range []string{"command", "cmd"} {
			if editCmd.MatchString(a.Get(k).String()) {
				return true
			}
		}
	}
	return false
}

// noteCall records the files named in a tool call.
func (f *fileLog) noteCall(name, args string) {
	a := gjson.Parse(args)
	kind := "read"
	switch {
	case modifyTools.MatchString(name):
		kind = "modified"
	case searchTools.MatchString(name):
		kind = "found"
	}
	for _, k := range []string{"path", "file_path", "filename", "file", "notebook_path"} {
		if v := a.Get(k).String(); v != "" {
			f.add(v, kind)
		}
	}
	for _, k := range []string{"command", "cmd"} {
		cmd := a.Get(k).String()
		if cmd == "" {
			continue
		}
		ck := "read"
		if modifyCmd.MatchString(cmd) {
			ck = "modified"
		}
		for _, m := range pathToken.FindAllStringSubmatch(cmd, 20) {
			f.add(m[1], ck)
		}
	}
}

// noteResult records files a search result lists: the paths of its first
// 59 lines, 3 a line, and the first 3 of the rest.
func (f *fileLog) noteResult(text string) {
	n := 0
	for i, line := range strings.SplitN(text, "\n", 60) {
		left := 3
		for {
			// The rest (i == 59) is read line by line, as a path never
			// spans lines, and only the lines that may hold one are
			// searched: linear, whatever the text.
			l, rest, more := line, "", false
			if i == 59 {
				l, rest, more = strings.Cut(line, "\n")
			}
			if mayHavePath(l) {
				for _, m := range pathToken.FindAllStringSubmatch(l, left) {
					left--
					if strings.Contains(m[1], "/") {
						f.add(m[1], "found")
						n++
					}
				}
			}
			if !more || left == 0 {
				break
			}
			line = rest
		}
		if n > 40 {
			return
		}
	}
}

// mayHavePath reports whether s has what every pathToken match has: a dot
// before an ASCII letter.
func mayHavePath(s string) bool {
	for i := strings.IndexByte(s, '.'); i >= 0 && i+1 < len(s); {
		if c := s[i+1] | 0x20; c >= 'a' && c <= 'z' {
			return true
		}
		j := strings.IndexByte(s[i+1:], '.')
		if j < 0 {
			return false
		}
		i += 1 + j
	}
	return false
}

// section renders the Files section, most recent first, bounded; of the
// files outputs only listed, those in the agent's own tree come first —
// a relative path, or one under the directory all the absolute paths it
// modified or read share — before a build log's or a search's others.
func (f *fileLog) section() string {
	if len(f.order) == 0 {
		return ""
	}
	root := ""
	for _, p := range f.order {
		if f.kind[p] == "found" || !path.IsAbs(p) {
			continue
		}
		if root == "" {
			root = path.Dir(p)
		}
		for root != "/" && !strings.HasPrefix(p, root+"/") {
			root = path.Dir(root)
		}
	}
	own := func(p string) bool {
		return f.kind[p] != "found" || !path.IsAbs(p) || root != "" && root != "/" && strings.HasPrefix(p, root+"/")
	}
	paths := append([]string(nil), f.order...)
	sort.SliceStable(paths, func(i, j int) bool {
		if oi, oj := own(paths[i]), own(paths[j]); oi != oj {
			return oi
		}
		return f.sequence[paths[i]] > f.sequence[paths[j]]
	})
	var b strings.Builder
	b.WriteString("## Files\n")
	for _, kind := range fileKinds {
		var list []string
		for _, p := range paths {
			if f.kind[p] == kind {
				list = append(list, p)
			}
		}
		if len(list) == 0 {
			continue
		}
		more := ""
		if len(list) > maxFiles {
			more = fmt.Sprintf(" (+%d more)", len(list)-maxFiles)
			list = list[:maxFiles]
		}
		fmt.Fprintf(&b, "- %s: %s%s\n", kind, strings.Join(list, ", "), more)
	}
	return b.String()
}

// filesOf builds the Files section of items [from, to).
func (c *conversation) filesOf(from, to int) string {
	var texts []view.Text
	for i := from; i < to; i++ {
		if t := c.text(i); len(t.Calls) > 0 || len(t.Results) > 0 {
			texts = append(texts, t)
		}
	}
	return filesOfTexts(texts)
}

// filesOfTexts builds the Files section of items' texts (those without
// calls or results may be left out: they name no file).
func filesOfTexts(texts []view.Text) string {
	fl := newFileLog()
	names := map[string]string{}
	for _, t := range texts {
		for _, r := range t.Results {
			if searchTools.MatchString(names[r.CallID]) || strings.Contains(strings.ToLower(names[r.CallID]), "bash") {
				fl.noteResult(r.Text)
			}
		}
		for _, call := range t.Calls {
			names[call.ID] = call.Name
			fl.noteCall(call.Name, call.Args)
		}
	}
	return fl.section()
}

// filesMemo holds the Files section of a range of items, built once
// (safe for concurrent use: an LLM summary's decoration may run on the
// summarizer call's goroutine).
type filesMemo struct {
	once  sync.Once
	files string
}

// get returns the section, calling build the first time.
func (m *filesMemo) get(build func() string) string {
	m.once.Do(func() { m.files = build() })
	return m.files
}

// note says what items [from, to) held without summarizing them
// (condense.stand_ins notes): how many calls of which tools, how many
// results reported errors, the user's words, and the Files section (kept
// in files); the recall tool and the originals' id hold the rest.
func (c *conversation) note(from, to int, files *filesMemo) string {
	var b strings.Builder
	var texts []view.Text
	calls := map[string]int{}
	byID := map[string]view.Call{}
	var names []string
	errs, total := 0, 0
	for i := from; i < to; i++ {
		t := c.text(i)
		if len(t.Calls) > 0 || len(t.Results) > 0 {
			texts = append(texts, t)
		}
		for _, call := range t.Calls {
			if calls[call.Name] == 0 {
				names = append(names, call.Name)
			}
			calls[call.Name]++
			byID[call.ID] = call
			total++
		}
		for _, r := range t.Results {
			if lineRank("→ "+resultDigest(byID[r.CallID], r.Text)) == errorRank {
				errs++
			}
		}
		if t.Role == "user" && (len(t.Results) == 0 || strings.TrimSpace(t.Text) != "") {
			writeLine(&b, "- User: ", shorten(oneLine(t.Text), userChars))
		}
	}
	sort.SliceStable(names, func(i, j int) bool { return calls[names[i]] > calls[names[j]] })
	parts := make([]string, 0, len(names))
	for _, n := range names {
		parts = append(parts, fmt.Sprintf("%s %d", n, calls[n]))
	}
	head := fmt.Sprintf("- %d messages, %d tool calls", to-from, total)
	if len(parts) > 0 {
		head += " (" + strings.Join(parts, ", ") + ")"
	}
	if errs > 0 {
		head += fmt.Sprintf(", %d results with errors", errs)
	}
	out := head + "\n" + b.String()
	if f := files.get(func() string { return filesOfTexts(texts) }); f != "" {
		out += f
	}
	return out
}

// extractive summarizes items [from, to) step by step, its Files section
// kept in files.
func (c *conversation) extractive(from, to int, files *filesMemo) string {
	var b strings.Builder
	// A line an item at most, of its text or less (a large item's is cut
	// short): the items' size, within 64 bytes an item, is room enough
	// most of the time.
	raw := c.req.Items[to-1].End - c.req.Items[from].Start
	b.Grow(max(min(raw, 64*(to-from)), 0))
	calls := map[string]view.Call{} // by id
	// Each item's text is decoded once, for the steps and the Files
	// (which read the texts with calls or results only).
	var texts []view.Text
	// An assistant's words wait for the calls of its turn: in Responses
	// they are items of their own after the message, and the words are a
	// decision when any of them edits a file. Every item's calls are
	// written by flush, after its line.
	var said string
	var turn []view.Call
	flush := func() {
		if said != "" {
			label := "- Assistant: "
			if editsFiles(turn) {
				label = "- Decision: "
			}
			writeLine(&b, label, said)
		}
		for _, call := range turn {
			writeLine(&b, "  - called ", call.Name, "(", keyArgs(call.Args), ")")
		}
		said, turn = "", nil
	}
	for i := from; i < to; i++ {
		t := c.text(i)
		if len(t.Calls) > 0 || len(t.Results) > 0 {
			texts = append(texts, t)
		}
		for _, call := range t.Calls {
			calls[call.ID] = call
		}
		if t.Role == "assistant" && strings.TrimSpace(t.Text) == "" && len(t.Results) == 0 {
			turn = append(turn, t.Calls...) // a call of the turn (Responses)
			continue
		}
		flush()
		for _, r := range t.Results {
			call := calls[r.CallID]
			writeLine(&b, "    → ", call.Name, ": ", resultDigest(call, r.Text))
		}
		switch t.Role {
		case "user":
			if len(t.Results) == 0 || strings.TrimSpace(t.Text) != "" {
				writeLine(&b, "- User: ", shorten(oneLine(t.Text), userChars))
			}
		case "system", "developer":
			writeLine(&b, "- System note: ", shorten(oneLine(t.Text), userChars))
		case "assistant":
			said = firstSentences(t.Text, assistantChars)
		}
		turn = t.Calls
	}
	flush()
	if f := files.get(func() string { return filesOfTexts(texts) }); f != "" {
		b.WriteString(f)
	}
	return b.String()
}

// transcript renders items [from, to) as plain text for an LLM
// summarizer: tool calls and results as text, so the summarizer request
// has no tool-pairing constraints. Very long texts are cut in the middle.
func (c *conversation) transcript(from, to int) string {
	var b strings.Builder
	cut := func(text string) string {
		if len(text) > 12000 {
			text = text[:6000] + fmt.Sprintf("\n[… %d characters omitted …]\n", len(text)-12000) + text[len(text)-6000:]
		}
		return text
	}
	for i := from; i < to; i++ {
		t := c.text(i)
		for _, r := range t.Results {
			fmt.Fprintf(&b, "[tool result %s]\n%s\n\n", r.CallID, cut(r.Text))
		}
		if t.Role == "tool" || (len(t.Results) > 0 && t.Text == "" && len(t.Calls) == 0) {
			continue
		}
		fmt.Fprintf(&b, "[%s]\n%s\n", t.Role, cut(t.Text))
		for _, call := range t.Calls {
			fmt.Fprintf(&b, "[tool call %s] %s(%s)\n", call.ID, call.Name, call.Args)
		}
		b.WriteString("\n")
	}
	return b.String()
}
