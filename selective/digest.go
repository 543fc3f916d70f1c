package selective

import (
	"encoding/json"
	"fmt"
	"path"
	"regexp"
	"strconv"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/condense-proxy/condense-proxy/logfacts"
)

// Kinds of digest.
const (
	KindFile    = "file"
	KindLog     = "log"
	KindSearch  = "search"
	KindJSON    = "json"
	KindGeneric = "generic"
)

// Input is one tool output to digest.
type Input struct {
	Tool    string // the tool's name, from the matching tool call
	Args    string // the call's JSON arguments
	Content string // the output text
	// Later is text of the messages that followed the output (a fixed
	// window of them), where error locations pointing into a file read are
	// looked for.
	Later string
	// Key identifies the output and its context (the digest's id): a
	// Summarize function may share and cache its work under it.
	Key string
}

var (
	lineNumPrefix = regexp.MustCompile(`^\s*(\d+)(?:→|\t|: |│)`)
	declaration   = regexp.MustCompile(`^(?:var|const|let)\s|^\s*(?:package\s|import\s|from\s+\S+\s+import\s|func\s|def\s|async\s+def\s|class\s|type\s|struct\s|interface\s|enum\s|trait\s|impl\b|(?:pub(?:\([^)]*\))?\s+)?(?:async\s+)?fn\s|(?:export\s+)?(?:default\s+)?(?:async\s+)?function\b|export\s+(?:const|class|interface|type)\s|module\s|#include\s|#define\s|(?:public|private|protected|static)\s.*[({]\s*$)`)
	passFailCount = regexp.MustCompile(`(?i)\b(\d+) (passed|failed|errors?|skipped|xfailed|xpassed|tests?)\b|Tests run: \d+, Failures: \d+, Errors: \d+`)
	goPkgResult   = regexp.MustCompile(`^(ok|FAIL|---)\s+\S+`)
	grepLine      = regexp.MustCompile(`^([^\s:][^:]*?):(\d+)[:-]`)
	pathLine      = regexp.MustCompile(`^\.?/?[\w.@-]+(/[\w.@-]+)+/?$`)
	testCommand   = regexp.MustCompile(`(?i)(\btest\b|pytest|jest|vitest|mocha|cargo (test|build|check)|go (test|build|vet)|\bmake\b|npm run|tsc\b|mvn|gradle|ctest|tox|unittest)`)
	searchCommand = regexp.MustCompile(`(^|[\s|;&])(grep|rg|ag|find|fd|ls|tree|git grep|glob)\b`)
	readCommand   = regexp.MustCompile(`^\s*(cat|head|tail|less|nl|sed -n|bat|view)\b`)
	readTool      = regexp.MustCompile(`(?i)(read|open|view|cat|get_file|file_content|show)`)
	filePathToken = regexp.MustCompile(`[\w./-]+\.\w+`)
	runCommand    = regexp.MustCompile(`(?:^|[\s;&|(])(?:python3?|node|deno|bun|go run|cargo run|ruby|php|java|dotnet|perl|bash|sh|\./[\w.-]+|npx|npm|yarn|pnpm)\s`)
	searchTool    = regexp.MustCompile(`(?i)(grep|glob|find|search|list|ls\b|tree)`)
)

// keyArg is the argument that says what a call was about.
func keyArg(args string) string {
	a := gjson.Parse(args)
	for _, k := range []string{"file_path", "path", "filename", "file", "notebook_path", "pattern", "query", "command", "cmd", "url"} {
		if v := a.Get(k).String(); v != "" {
			return oneLine(v, 120)
		}
	}
	return ""
}

func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > n {
		cut := n
		for cut > 0 && s[cut]&0xC0 == 0x80 {
			cut--
		}
		s = s[:cut] + "…"
	}
	return s
}

// Classify picks the digest kind for an output.
func Classify(in Input) string {
	cmd := command(in.Args)
	trimmed := strings.TrimSpace(stripTags(in.Content))
	switch {
	case (strings.HasPrefix(trimmed, "{") || strings.HasPrefix(trimmed, "[")) && gjson.Valid(trimmed):
		return KindJSON
	case searchTool.MatchString(in.Tool) || (cmd != "" && searchCommand.MatchString(cmd) && !testCommand.MatchString(cmd)):
		return KindSearch
	case cmd != "" && testCommand.MatchString(cmd):
		return KindLog
	case readTool.MatchString(in.Tool) || (cmd != "" && readCommand.MatchString(cmd)):
		return KindFile
	case strings.Contains(trimmed, "Traceback (most recent call last)") || (exitStatus(in.Content) != "" && exitStatus(in.Content) != "0"):
		return KindLog
	case cmd != "" && runCommand.MatchString(cmd+" "):
		// A program was run: its output is a log, even when it quotes code.
		return KindLog
	}
	lines := strings.Split(trimmed, "\n")
	grep, decl, fail := 0, 0, 0
	// A line's facts depend on its text alone: a line repeated is read
	// once.
	type facts struct{ grep, decl, fail bool }
	known := map[string]facts{}
	for _, l := range lines {
		f, ok := known[l]
		if !ok {
			f = facts{isGrepLine(l) || isPathLine(strings.TrimSpace(l)), isDeclaration(stripLineNumFast(l)),
				len(logfacts.FailingTests(l)) > 0 || isPassFail(l)}
			known[l] = f
		}
		if f.grep {
			grep++
		}
		if f.decl {
			decl++
		}
		if f.fail {
			fail++
		}
	}
	switch {
	case fail > 0:
		return KindLog
	case grep*2 > len(lines):
		return KindSearch
	case decl > 2:
		return KindFile
	}
	return KindGeneric
}

// stripTags removes mini-swe-agent's <returncode>/<output> wrappers.
func stripTags(s string) string {
	for _, t := range []string{"<output>", "</output>", "<warning>", "</warning>"} {
		s = strings.ReplaceAll(s, t, "")
	}
	if i := strings.Index(s, "</returncode>"); i >= 0 && strings.HasPrefix(strings.TrimSpace(s), "<returncode>") {
		s = s[i+len("</returncode>"):]
	}
	return s
}

func stripLineNum(l string) string {
	if m := lineNumPrefix.FindStringIndex(l); m != nil {
		return l[m[1]:]
	}
	return l
}

// Digest returns the body of a digest for in (without the marker line)
// and its kind.
func Digest(in Input) (string, string) {
	kind := Classify(in)
	var body string
	switch kind {
	case KindFile:
		body = fileDigest(in)
	case KindLog:
		body = logDigest(in.Content)
	case KindSearch:
		body = searchDigest(in.Content)
	case KindJSON:
		body = jsonDigest(strings.TrimSpace(stripTags(in.Content)))
	default:
		body = genericDigest(in.Content)
	}
	return body, kind
}

// exitStatus is the exit status an output reports ("" when none).
func exitStatus(s string) string { return logfacts.Exit(s) }

// command is the shell command a call ran: its command argument, or cmd
// (Codex's exec_command).
func command(args string) string {
	if cmd := gjson.Get(args, "command").String(); cmd != "" {
		return cmd
	}
	return gjson.Get(args, "cmd").String()
}

// filePath is the file a call read: its file_path or path argument, else
// the first path in its command.
func filePath(args string) string {
	for _, k := range []string{"file_path", "path"} {
		if p := gjson.Get(args, k).String(); p != "" {
			return p
		}
	}
	return filePathToken.FindString(command(args))
}

// lineNumber is the number of line l, the i-th of a file's output: the
// number the read tool put before it, else its position.
func lineNumber(i int, l string) int {
	if !mayLineNum(l) {
		return i + 1
	}
	if m := lineNumPrefix.FindStringSubmatch(l); m != nil {
		n, _ := strconv.Atoi(m[1])
		return n
	}
	return i + 1
}

// fileDigest: path, line count, outline with line numbers, and the lines
// around locations later messages point at.
func fileDigest(in Input) string {
	content := stripTags(in.Content)
	lines := strings.Split(strings.TrimRight(content, "\n"), "\n")
	p := filePath(in.Args)
	var b strings.Builder
	fmt.Fprintf(&b, "file %s, %d lines\n", p, len(lines))
	// Lines referenced later as error locations: path:line or "line N".
	refs := lineRefs(in.Later, path.Base(p))
	b.WriteString("outline:\n")
	shown := 0
	decls := map[string]bool{} // a line repeated is read once
	for i, l := range lines {
		d, ok := decls[l]
		if !ok {
			d = isDeclaration(stripLineNumFast(l))
			decls[l] = d
		}
		if d {
			if shown < 120 {
				fmt.Fprintf(&b, "%5d  %s\n", lineNumber(i, l), oneLine(stripLineNum(l), 160))
			}
			shown++
		}
	}
	if shown > 120 {
		fmt.Fprintf(&b, "  [… %d more declarations …]\n", shown-120)
	}
	if len(refs) > 0 {
		writeReferenced(&b, lines, refs)
	}
	return b.String()
}

// writeReferenced writes the lines within two of a line number in refs.
func writeReferenced(b *strings.Builder, lines []string, refs map[int]bool) {
	b.WriteString("referenced later:\n")
	var keep []int
	for i, l := range lines {
		n := lineNumber(i, l)
		for d := -2; d <= 2; d++ {
			if refs[n+d] {
				keep = append(keep, i)
				break
			}
		}
	}
	last := -2
	for _, i := range keep {
		if i != last+1 {
			b.WriteString("  …\n")
		}
		fmt.Fprintf(b, "%5d  %s\n", lineNumber(i, lines[i]), oneLine(stripLineNum(lines[i]), 200))
		last = i
	}
}

// lineRefs finds the line numbers text points at in the file named base:
// "base:N" (compilers, test runners) and `base", line N` (Python). It looks
// for the name as plain text: no pattern is built from it.
func lineRefs(text, base string) map[int]bool {
	refs := map[int]bool{}
	if base == "" || base == "." || base == "/" {
		return refs
	}
	for rest := text; len(refs) < 50; {
		i := strings.Index(rest, base)
		if i < 0 {
			break
		}
		rest = rest[i+len(base):]
		after := rest
		switch {
		case strings.HasPrefix(after, ":"):
			after = after[1:]
		case strings.HasPrefix(after, `", line `):
			after = after[len(`", line `):]
		default:
			continue
		}
		j := 0
		for j < len(after) && j < 9 && after[j] >= '0' && after[j] <= '9' {
			j++
		}
		if n, err := strconv.Atoi(after[:j]); err == nil {
			refs[n] = true
		}
	}
	return refs
}

// logDigest: counts, failing tests, error lines with context, exit status.
func logDigest(content string) string {
	text := stripTags(content)
	lines := strings.Split(strings.TrimRight(text, "\n"), "\n")
	var b strings.Builder
	fmt.Fprintf(&b, "log, %d lines", len(lines))
	if st := exitStatus(content); st != "" {
		fmt.Fprintf(&b, ", exit status %s", st)
	}
	b.WriteString("\n")
	seen := map[string]bool{}
	read := map[string]bool{} // a line repeated adds no count
	var counts, pkgs []string
	for _, l := range lines {
		t := strings.TrimSpace(l)
		if !read[t] && mayPassFail(t) {
			for _, m := range passFailCount.FindAllString(counted(t), -1) {
				if !seen[m] && len(counts) < 12 {
					seen[m] = true
					counts = append(counts, m)
				}
			}
		}
		read[t] = true
		if strings.HasPrefix(t, "FAIL") && len(pkgs) < 20 && goPkgResult.MatchString(t) {
			pkgs = append(pkgs, oneLine(t, 120))
		}
	}
	failing := logfacts.FailingTests(text)
	if len(counts) > 0 {
		fmt.Fprintf(&b, "counts: %s\n", strings.Join(counts, ", "))
	}
	if len(failing) > 0 {
		more := ""
		if len(failing) > 40 {
			more = fmt.Sprintf(" (+%d more)", len(failing)-40)
			failing = failing[:40]
		}
		fmt.Fprintf(&b, "failing: %s%s\n", strings.Join(failing, ", "), more)
	}
	for _, p := range pkgs {
		fmt.Fprintf(&b, "%s\n", p)
	}
	b.WriteString(errorBlocks(lines, 12, 2))
	return b.String()
}

// errorBlocks keeps the key lines (errors, failing tests, assertions,
// compiler errors: package logfacts) with ctx lines of context, at most
// most blocks.
func errorBlocks(lines []string, most, ctx int) string {
	var b strings.Builder
	blocks, last := 0, -1
	for i, l := range lines {
		if !logfacts.IsKey(l) || i <= last {
			continue
		}
		if blocks == most {
			b.WriteString("[… more error lines condensed …]\n")
			break
		}
		if blocks == 0 {
			b.WriteString("errors:\n")
		}
		from, to := max(i-ctx, last+1), min(len(lines), i+ctx+1)
		if from > last+1 && last >= 0 {
			b.WriteString("  …\n")
		}
		for j := from; j < to; j++ {
			fmt.Fprintf(&b, "  %s\n", oneLine(lines[j], 240))
		}
		last = to - 1
		blocks++
	}
	return b.String()
}

// searchDigest: match and file counts, the files, the first matches.
func searchDigest(content string) string {
	text := strings.TrimSpace(stripTags(content))
	lines := strings.Split(text, "\n")
	files := map[string]int{}
	var order []string
	matches, withLines := 0, 0
	type found struct {
		file string
		grep bool // a grep line (file:line:), not a bare path
	}
	known := map[string]found{} // a line repeated is read once
	for _, l := range lines {
		m, ok := known[l]
		if !ok {
			if g := grepSubmatch(l); g != nil {
				m = found{g[1], true}
			} else if isPathLine(strings.TrimSpace(l)) {
				m = found{strings.TrimSpace(l), false}
			}
			known[l] = m
		}
		f := m.file
		if m.grep {
			withLines++
		}
		if f == "" {
			continue
		}
		matches++
		if files[f] == 0 {
			order = append(order, f)
		}
		files[f]++
	}
	var b strings.Builder
	fmt.Fprintf(&b, "search results: %d matches in %d files (%d lines)\n", matches, len(files), len(lines))
	if len(order) > 0 {
		shown := order
		if len(shown) > 40 {
			shown = shown[:40]
		}
		b.WriteString("files: ")
		for i, f := range shown {
			if i > 0 {
				b.WriteString(", ")
			}
			if files[f] > 1 {
				fmt.Fprintf(&b, "%s (%d)", f, files[f])
			} else {
				b.WriteString(f)
			}
		}
		if len(order) > len(shown) {
			fmt.Fprintf(&b, " (+%d more)", len(order)-len(shown))
		}
		b.WriteString("\n")
	}
	if withLines > 0 || len(order) == 0 {
		// Matching lines say more than the file list; a plain list of
		// paths is already above.
		b.WriteString("first matches:\n")
		for _, l := range lines[:min(len(lines), 10)] {
			fmt.Fprintf(&b, "  %s\n", oneLine(l, 200))
		}
	}
	return b.String()
}

// jsonDigest: the structure (keys and array lengths) with first and last
// items.
func jsonDigest(s string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "JSON, %d bytes\n", len(s))
	describe(&b, gjson.Parse(s), "", 0)
	return b.String()
}

func describe(b *strings.Builder, v gjson.Result, indent string, depth int) {
	switch {
	case v.IsObject():
		keys := []string{}
		v.ForEach(func(k, _ gjson.Result) bool { keys = append(keys, k.String()); return true })
		if depth >= 3 {
			fmt.Fprintf(b, "%sobject {%s}\n", indent, oneLine(strings.Join(keys, ", "), 200))
			return
		}
		n := 0
		v.ForEach(func(k, val gjson.Result) bool {
			if n == 30 {
				fmt.Fprintf(b, "%s[… %d more keys …]\n", indent, len(keys)-30)
				return false
			}
			n++
			if val.IsObject() || val.IsArray() {
				fmt.Fprintf(b, "%s%s:\n", indent, k.String())
				describe(b, val, indent+"  ", depth+1)
			} else {
				fmt.Fprintf(b, "%s%s: %s\n", indent, k.String(), oneLine(val.Raw, 80))
			}
			return true
		})
	case v.IsArray():
		items := v.Array()
		fmt.Fprintf(b, "%sarray[%d]\n", indent, len(items))
		if len(items) == 0 || depth >= 3 {
			return
		}
		fmt.Fprintf(b, "%sfirst: %s\n", indent, oneLine(items[0].Raw, 200))
		if len(items) > 1 {
			fmt.Fprintf(b, "%slast: %s\n", indent, oneLine(items[len(items)-1].Raw, 200))
		}
	default:
		fmt.Fprintf(b, "%s%s\n", indent, oneLine(v.Raw, 200))
	}
}

// genericDigest: head and tail lines around a condensed middle, plus the
// error-looking lines of the middle.
func genericDigest(content string) string {
	text := strings.TrimRight(stripTags(content), "\n")
	lines := strings.Split(text, "\n")
	const head, tail = 15, 10
	var b strings.Builder
	if st := exitStatus(content); st != "" {
		fmt.Fprintf(&b, "exit status %s\n", st)
	}
	if len(lines) <= head+tail {
		// Few but long lines: cut each.
		for _, l := range lines {
			fmt.Fprintf(&b, "%s\n", oneLine(l, 300))
		}
		return b.String()
	}
	for _, l := range lines[:head] {
		fmt.Fprintf(&b, "%s\n", oneLine(l, 300))
	}
	fmt.Fprintf(&b, "[… %d lines condensed …]\n", len(lines)-head-tail)
	b.WriteString(errorBlocks(lines[head:len(lines)-tail], 8, 1))
	for _, l := range lines[len(lines)-tail:] {
		fmt.Fprintf(&b, "%s\n", oneLine(l, 300))
	}
	return b.String()
}

// quote renders s as a JSON string.
func quote(s string) []byte {
	b, _ := json.Marshal(s)
	return b
}
