package condense

import (
	"fmt"
	"io"
	"math/rand"
	"strconv"
	"strings"
	"testing"

	"github.com/condense-proxy/condense-proxy/codec/responses"
	"github.com/condense-proxy/condense-proxy/tokenizer"
	"github.com/condense-proxy/condense-proxy/view"
)

func TestResultDigest(t *testing.T) {
	tests := []struct {
		name, in string
		want     []string
		not      []string
	}{
		{"mini-swe-agent output", "<returncode>1</returncode>\n<output>\nTraceback (most recent call last):\n  File \"x.py\", line 3\nValueError: bad value\n</output>",
			[]string{"Traceback", "exit 1", "ValueError: bad value"}, []string{"</output>"}},
		{"paths with error in the name are not errors", "/a/0007_alter_validators_add_error_messages.py\n/b/errors_test.go\nok",
			[]string{"/a/0007_alter_validators_add_error_messages.py", "(3 lines)"}, []string{"! /b/errors_test.go"}},
		{"go test failure", "=== RUN TestA\n--- FAIL: TestA (0.00s)\n    a_test.go:12: got 1\nFAIL\nexit status 1",
			[]string{"--- FAIL: TestA", "exit 1"}, nil},
		{"assertion lines carry no error word", "=== RUN   TestStore\n--- PASS: TestOther (0.00s)\n--- FAIL: TestStore (0.00s)\n    store_test.go:42: got 3 want 4\nFAIL\nexit status 1",
			[]string{"--- FAIL: TestStore", "store_test.go:42: got 3 want 4", "exit 1"}, nil},
		{"pytest", "collected 3 items\n\ntests/test_x.py F..\n\nE       assert 3 == 4\ntests/test_x.py:7: AssertionError\nFAILED tests/test_x.py::test_sum - assert 3 == 4",
			[]string{"E       assert 3 == 4", "FAILED tests/test_x.py::test_sum"}, nil},
		{"a file read's code is not an error", "     1→/**\n    27→ * @return VSLA_SUCCESS or error code\n    28→ */\n    29→int f(void);",
			[]string{"1→/**", "(4 lines)"}, []string{"! 27→"}},
		{"cat -n's code is not an error", "     1\tpackage x\n     2\tvar ErrBad = errors.New(\"error: bad\")",
			[]string{"(2 lines)"}, []string{"! 2\t", "! 2 "}},
		{"a compiler's excerpt is not, its error is", "x.c:8:9: error: stray '\\' in program\n    8 |   printf(\"error: %d\", e);\n      |         ^",
			[]string{"x.c:8:9: error: stray"}, []string{"! 8 |"}},
		{"a digest is named by its id, its error lines kept", "[condense-proxy digest of Bash make -j$(nproc) 2>&1 | head -100 — log, original 100 lines, 2385 tokens; id dd1f40d33b1cb25d8: GET /v1/condense/originals/dd1f40d33b1cb25d8]\nlog, 100 lines, exit status 2\nerrors:\n  src/ops.h:29:14: error: conflicting types for 'pad'",
			[]string{"[digest dd1f40d33b1cb25d8, log of 100 lines]", "! src/ops.h:29:14: error: conflicting types for 'pad'"}, []string{"GET /v1/condense", "make -j"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := resultDigest(view.Call{Name: "bash"}, tc.in)
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("digest %q lacks %q", got, w)
				}
			}
			for _, n := range tc.not {
				if strings.Contains(got, n) {
					t.Errorf("digest %q has %q", got, n)
				}
			}
		})
	}
}

// TestResultDigestOfFiles: a file's content — a read's output, or a
// digest of a file — is code, whose lines name errors ("func f() error")
// without being any: a stand-in gives it no error lines, which would rank
// it with real errors (lineRank) and push decisions and failing tests out
// of a merged summary; a command's output keeps them.
func TestResultDigestOfFiles(t *testing.T) {
	code := "package store\n\nfunc Get(k string) (string, error) {\n\treturn \"\", fmt.Errorf(\"no error here\")\n}\n"
	digest := "[condense-proxy digest of read_file pkg/store/get.go — file, original 134 lines, 2036 tokens; id d8a237f7faa8ddb77: GET /v1/condense/originals/d8a237f7faa8ddb77]\nfile pkg/store/get.go, 133 lines\noutline:\n    9  func Func0(in string) (string, error) {"
	logs := "=== RUN   TestGet\n--- FAIL: TestGet (0.00s)\n    get_test.go:9: got error, want nil\nFAIL\nexit status 1"
	for _, tc := range []struct {
		name  string
		call  view.Call
		text  string
		error bool
	}{
		{"a read", view.Call{Name: "read_file", Args: `{"path":"pkg/store/get.go"}`}, code, false},
		{"cat", view.Call{Name: "bash", Args: `{"command":"cat pkg/store/get.go"}`}, code, false},
		{"a file's digest, its call unknown", view.Call{}, digest, false},
		{"a test run", view.Call{Name: "bash", Args: `{"command":"go test ./..."}`}, logs, true},
		{"a result of an unknown call", view.Call{}, logs, true},
	} {
		got := resultDigest(tc.call, tc.text)
		if lineRank("→ "+got) == errorRank != tc.error {
			t.Errorf("%s: %q ranks as an error: %v, want %v", tc.name, got, !tc.error, tc.error)
		}
	}
}

func TestFitSummaryKeepsFiles(t *testing.T) {
	var b strings.Builder
	for i := 0; i < 500; i++ {
		b.WriteString("- Assistant: a long line of what happened in this step of the work\n")
	}
	b.WriteString("## Files\n- modified: pkg/a.go\n")
	out := fitSummary(b.String(), 300, 0)
	if len(out) > 300*3 {
		t.Errorf("fitted summary %d bytes, bound %d", len(out), 900)
	}
	if !strings.Contains(out, "## Files\n- modified: pkg/a.go") || !strings.Contains(out, "lines of calls and results omitted") {
		t.Errorf("fitted summary lost the files section or the marker:\n%s", out)
	}
}

func TestFilesSection(t *testing.T) {
	fl := newFileLog()
	fl.noteCall("Read", `{"file_path":"/src/a.go"}`)
	fl.noteCall("Edit", `{"file_path":"/src/b.go","old_string":"x"}`)
	fl.noteCall("bash", `{"command":"sed -i s/a/b/ pkg/c.py && cat pkg/d.py"}`)
	fl.noteCall("Grep", `{"pattern":"Foo","path":"pkg/"}`)
	fl.noteResult("pkg/e.go:12: Foo()\npkg/f.go:3: Foo")
	sec := fl.section()
	for _, w := range []string{"modified: ", "/src/b.go", "pkg/c.py", "read: ", "/src/a.go", "found: ", "pkg/e.go"} {
		if !strings.Contains(sec, w) {
			t.Errorf("files section lacks %q:\n%s", w, sec)
		}
	}
}

// TestFilesOfTheAgentsTreeFirst: a build log that lists dozens of system
// paths after a search found the agent's own files does not crowd them
// out of the Files section (relative paths and those under the directory
// the agent's absolute ones share come first), and a file the agent named
// in a call stays read when a later output lists it again.
func TestFilesOfTheAgentsTreeFirst(t *testing.T) {
	fl := newFileLog()
	fl.noteCall("Edit", `{"file_path":"/home/u/paper/src/preamble.tex","old_string":"x"}`)
	fl.noteCall("Read", `{"file_path":"/home/u/paper/src/sections/intro.tex"}`)
	fl.noteResult("/home/u/paper/src/sections/conclusion.tex:1: x\n/home/u/paper/src/sections/intro.tex:4: y")
	var log strings.Builder
	for i := range 40 {
		fmt.Fprintf(&log, "(/usr/share/texlive/tex/latex/pkg%d/pkg%d.sty)\n", i, i)
	}
	for range 3 { // compiled again and again: the most recent paths
		fl.noteResult(log.String())
	}
	fl.noteResult("scripts/build.sh: 3: warning") // relative: in the agent's tree
	sec := fl.section()
	found := sec[strings.Index(sec, "- found: "):]
	if !strings.HasPrefix(found, "- found: scripts/build.sh, /home/u/paper/src/sections/conclusion.tex, /usr/share/") {
		t.Errorf("the agent's own found files are not first among the found ones, most recent first:\n%s", sec)
	}
	if !strings.Contains(sec, "- read: /home/u/paper/src/sections/intro.tex\n") || strings.Count(sec, "intro.tex") != 1 {
		t.Errorf("a file the agent read was demoted to found:\n%s", sec)
	}
}

// TestFitSummaryKeepsWhatTheAgentNeeds: a summary over its budget keeps
// the user's words, every distinct error line (a repeated one once) and
// the files before the assistant's words, the calls and the other results
// — never only its first lines and a count.
func TestFitSummaryKeepsWhatTheAgentNeeds(t *testing.T) {
	var b strings.Builder
	b.WriteString("- User: fix TestParseDuration in pkg/timeparse\n")
	for i := 0; i < 200; i++ {
		fmt.Fprintf(&b, "- Assistant: step %d, reading more of the code to see where it goes\n", i)
		fmt.Fprintf(&b, "  - called bash(command=cat pkg/file%d.go)\n", i)
		switch {
		case i == 150:
			b.WriteString("    → bash: --- FAIL: TestParseDuration | exit 1 | ! timeparse_test.go:42: got -1h, want 1h | (30 lines)\n")
		case i%50 == 7:
			b.WriteString("    → bash: ok | ! panic: index out of range | (9 lines)\n")
		default:
			fmt.Fprintf(&b, "    → bash: package timeparse %d | (120 lines)\n", i)
		}
		if i == 120 {
			b.WriteString("- User: also keep the API stable\n")
		}
	}
	b.WriteString("## Files\n- modified: pkg/timeparse/parse.go\n")
	out := fitSummary(b.String(), 300, 0)
	if len(out) > 300*3 {
		t.Errorf("fitted summary %d bytes, bound %d", len(out), 900)
	}
	for _, w := range []string{"fix TestParseDuration", "also keep the API stable", "got -1h, want 1h", "panic: index out of range", "pkg/timeparse/parse.go", "omitted"} {
		if !strings.Contains(out, w) {
			t.Errorf("fitted summary lacks %q:\n%s", w, out)
		}
	}
	if n := strings.Count(out, "panic: index out of range"); n != 1 {
		t.Errorf("a repeated error line kept %d times", n)
	}
}

// TestDecisionsKeptBeforeOtherWords: in a summary of a conversation, the
// assistant's words where its calls change files are decisions, kept with
// the error lines before its other words; a to-do list is no edit.
func TestDecisionsKeptBeforeOtherWords(t *testing.T) {
	calls := func(name, args string) []view.Call { return []view.Call{{ID: "c", Name: name, Args: args}} }
	for _, tc := range []struct {
		name  string
		calls []view.Call
		want  bool
	}{
		{"edit tool", calls("Edit", `{"file_path":"a.go"}`), true},
		{"sed -i", calls("bash", `{"command":"sed -i 's/a/b/' a.go"}`), true},
		{"heredoc", calls("bash", `{"command":"cat <<'EOF' > a.go\nx\nEOF"}`), true},
		{"to-do list", calls("TodoWrite", `{"todos":[]}`), false},
		{"a read with a redirect", calls("bash", `{"command":"go test ./... 2>&1 | head"}`), false},
	} {
		if got := editsFiles(tc.calls); got != tc.want {
			t.Errorf("%s: editsFiles = %v, want %v", tc.name, got, tc.want)
		}
	}
	var b strings.Builder
	b.WriteString("- User: fix the parser\n")
	for i := 0; i < 100; i++ {
		fmt.Fprintf(&b, "- Assistant: step %d, reading more of the code to see where it goes\n", i)
		if i%25 == 3 {
			fmt.Fprintf(&b, "- Decision: I will make parse %d return an error on empty input.\n", i)
		}
		fmt.Fprintf(&b, "  - called bash(command=cat pkg/file%d.go)\n", i)
	}
	out := fitSummary(b.String(), 200, 0)
	for i := 3; i < 100; i += 25 {
		if w := fmt.Sprintf("I will make parse %d return an error", i); !strings.Contains(out, w) {
			t.Errorf("fitted summary lacks the decision %q:\n%s", w, out)
		}
	}
	if strings.Contains(out, "step 99, reading") {
		t.Errorf("other words kept before the decisions:\n%s", out)
	}
}

// TestFactsTakeTheFactRoom: a summary over its budget keeps its facts —
// the user's words, every distinct error line, the decisions, the paths —
// in up to its fact room, the assistant's other words only within its
// budget, and never the calls or the results without an error (their
// originals are behind the summary's id). With no more fact room than
// budget, the facts fill the budget first.
func TestFactsTakeTheFactRoom(t *testing.T) {
	var b strings.Builder
	b.WriteString("- User: fix TestParseDuration in pkg/timeparse\n")
	for i := 0; i < 24; i++ {
		fmt.Fprintf(&b, "- Assistant: step %d, reading more of the code to see where it goes\n", i)
		fmt.Fprintf(&b, "  - called bash(command=go test ./pkg/timeparse/%d)\n", i)
		switch i % 3 {
		case 0:
			fmt.Fprintf(&b, "    → bash: --- FAIL: TestParseDuration_Case%d | exit 1 | ! duration_test.go:%d: got -%ds, want %ds\n", i, 10+i, i, i)
		case 1:
			fmt.Fprintf(&b, "- Decision: I will change pkg/timeparse/file%d.go because the sign is dropped (decision %d).\n", i, i)
		default:
			fmt.Fprintf(&b, "    → bash: ok pkg/timeparse %d | (20 lines)\n", i)
		}
	}
	b.WriteString("## Files\n- modified: pkg/timeparse/parse.go\n")
	facts := func(out string) (n int) {
		for i := 0; i < 24; i++ {
			switch i % 3 {
			case 0:
				if strings.Contains(out, fmt.Sprintf("duration_test.go:%d: got -%ds", 10+i, i)) {
					n++
				}
			case 1:
				if strings.Contains(out, fmt.Sprintf("(decision %d)", i)) {
					n++
				}
			}
		}
		return n
	}
	// The facts take about 1,600 bytes: more than a budget of 300 tokens
	// (900 bytes), less than one of 700 (2,100).
	const budget = 300
	tight, roomy := fitSummary(b.String(), budget, 0), fitSummary(b.String(), budget, 700)
	if len(tight) > budget*3 || len(roomy) > 700*3 {
		t.Errorf("summaries of %d and %d bytes, bounds %d and %d", len(tight), len(roomy), budget*3, 700*3)
	}
	if got := facts(roomy); got != 16 {
		t.Errorf("with room for them, %d of 16 error lines and decisions kept:\n%s", got, roomy)
	}
	if got, tightGot := facts(roomy), facts(tight); tightGot >= got || tightGot == 0 {
		t.Errorf("%d facts kept within the budget, %d with the fact room: want some, and fewer", tightGot, got)
	}
	for name, out := range map[string]string{"tight": tight, "roomy": roomy} {
		if strings.Contains(out, "called bash") || strings.Contains(out, "ok pkg/timeparse") {
			t.Errorf("%s: a call or a result without an error kept over the budget:\n%s", name, out)
		}
		if !strings.Contains(out, "fix TestParseDuration") || !strings.Contains(out, "pkg/timeparse/parse.go") {
			t.Errorf("%s: the user's words or the Files section lost:\n%s", name, out)
		}
	}
	// The assistant's other words take no more than the budget.
	other := 0
	for _, l := range strings.Split(roomy, "\n") {
		if strings.HasPrefix(l, "- Assistant:") {
			other += len(l) + 1
		}
	}
	if other > 0 && len(roomy)-other > budget*3 {
		t.Errorf("the assistant's other words take %d bytes of a summary whose facts fill its budget", other)
	}
	if big := fitSummary(b.String(), 900, 1800); !strings.Contains(big, "- Assistant:") {
		t.Errorf("a budget the facts leave room in keeps none of the assistant's other words:\n%s", big)
	}
}

// TestErrorResultsKeepTheirErrors: over its budget, a result kept for its
// error lines keeps its tool's name, exit status and errors, and its
// first line only where that is an error itself or a digest's id — the
// room its first lines took holds more facts.
func TestErrorResultsKeepTheirErrors(t *testing.T) {
	var b strings.Builder
	b.WriteString("- User: fix TestParseDuration\n")
	calls, firsts := 0, 0
	for i := 0; i < 40; i++ {
		n, _ := fmt.Fprintf(&b, "  - called bash(command=go test ./pkg/%d)\n", i)
		calls += n
		first, _ := fmt.Fprintf(io.Discard, ": === RUN   TestOther%d", i)
		firsts += first
		fmt.Fprintf(&b, "    → bash: === RUN   TestOther%d | exit 1 | ! --- FAIL: TestParseDuration_Case%d (0.01s) | (40 lines)\n", i, i)
		fmt.Fprintf(&b, "- Decision: I will change pkg/file%d.go because the sign is dropped (decision %d).\n", i, i)
	}
	b.WriteString("    → bash: error: cannot find package pkg/x | exit 1 | ! --- FAIL: TestBuild (0.01s)\n")
	b.WriteString("    → read: [digest 68af417463ae69ee, log of 900 lines] | ! panic: nil map\n")
	text := b.String()
	// Room for the facts without their results' first lines, not with.
	budget := (len(text) - calls - firsts/2) / 3
	out := fitSummary(text, budget, budget)
	for _, w := range []string{
		"    → bash | exit 1 | ! --- FAIL: TestParseDuration_Case0 (0.01s)\n",
		"    → bash: error: cannot find package pkg/x | exit 1 | ! --- FAIL: TestBuild (0.01s)\n",
		"    → read: [digest 68af417463ae69ee, log of 900 lines] | ! panic: nil map\n",
	} {
		if !strings.Contains(out, w) {
			t.Errorf("fitted summary lacks %q:\n%s", w, out)
		}
	}
	if strings.Contains(out, "=== RUN") {
		t.Errorf("a first line that is no error kept:\n%s", out)
	}
	// Without the first lines, every error line and decision fits.
	for i := 0; i < 40; i++ {
		if !strings.Contains(out, fmt.Sprintf("Case%d (0.01s)", i)) || !strings.Contains(out, fmt.Sprintf("(decision %d)", i)) {
			t.Errorf("error line or decision %d lost:\n%s", i, out)
		}
	}
}

// TestOneLineIsFieldsJoined: oneLine returns what strings.Fields and Join
// return, whether it takes its shortcut (ASCII already on one line) or
// not, and takes the shortcut on such text.
func TestOneLineIsFieldsJoined(t *testing.T) {
	pieces := []string{"a", "bc", " ", "  ", "\t", "\n", "\r\n", "\v", "\f", "\u0085", "\u00a0", "\u2028", "é", "漢", "x.y", "\xff", ""}
	rng := rand.New(rand.NewSource(5))
	for i := 0; i < 20000; i++ {
		var b strings.Builder
		for k := rng.Intn(8); k > 0; k-- {
			b.WriteString(pieces[rng.Intn(len(pieces))])
		}
		s := b.String()
		if got, want := oneLine(s), strings.Join(strings.Fields(s), " "); got != want {
			t.Fatalf("oneLine(%q) = %q, want %q", s, got, want)
		}
	}
	for _, s := range []string{"", "ping 123", "a b c", "Step 3: checking."} {
		if !isOneLine(s) {
			t.Errorf("isOneLine(%q) = false: the shortcut is not taken", s)
		}
	}
	for _, s := range []string{" a", "a ", "a  b", "a\tb", "a\nb", "é", "a\u00a0b"} {
		if isOneLine(s) {
			t.Errorf("isOneLine(%q) = true", s)
		}
	}
}

// TestExtractiveAllocatesPerChunk: the extractive summary of many tiny
// messages allocates for its text, not for each message (it split each
// message into words, joined them and formatted its line: a few
// allocations a message, which a request of 100,000 of them paid).
func TestExtractiveAllocatesPerChunk(t *testing.T) {
	const n = 2000
	msgs := []map[string]any{{"role": "system", "content": "You are a coding agent."}}
	for i := 0; i < n/2; i++ {
		msgs = append(msgs, map[string]any{"role": "user", "content": fmt.Sprintf("ping %d", i)},
			map[string]any{"role": "assistant", "content": "pong"})
	}
	c, err := parseBody(mustJSON(map[string]any{"model": "gpt-4o", "messages": msgs}))
	if err != nil {
		t.Fatal(err)
	}
	allocs := testing.AllocsPerRun(3, func() { c.extractive(c.head, c.len(), new(filesMemo)) })
	t.Logf("%.0f allocations", allocs)
	if allocs > n/10 {
		t.Errorf("%.0f allocations for an extractive summary of %d messages: more than one for every 10", allocs, n)
	}
}

// TestDecisionAcrossTheTurnsItems: the assistant's words before an edit
// are a decision whether the edit is in the same item (chat) or in an
// item of its own after the message (Responses).
func TestDecisionAcrossTheTurnsItems(t *testing.T) {
	const said = "I will change a.go because the sign is dropped."
	args := `{"cmd":"sed -i 's/a/b/' a.go"}`
	chatBody := `{"model":"gpt-4o","messages":[{"role":"user","content":"fix it"},` +
		`{"role":"assistant","content":"` + said + `","tool_calls":[{"id":"c1","type":"function","function":{"name":"exec_command","arguments":` + strconv.Quote(args) + `}}]},` +
		`{"role":"tool","tool_call_id":"c1","content":"ok"},{"role":"user","content":"go on"}]}`
	respBody := `{"model":"gpt-5","input":[{"type":"message","role":"user","content":"fix it"},` +
		`{"type":"message","role":"assistant","content":[{"type":"output_text","text":"` + said + `"}]},` +
		`{"type":"function_call","call_id":"c1","name":"exec_command","arguments":` + strconv.Quote(args) + `},` +
		`{"type":"function_call_output","call_id":"c1","output":"ok"},{"type":"message","role":"user","content":"go on"}]}`
	for _, tc := range []struct {
		name  string
		codec view.Codec
		body  string
	}{{"chat", chatCodec, chatBody}, {"responses", responses.New(counter), respBody}} {
		r, err := tc.codec.Scan([]byte(tc.body), func(string) string { return tokenizer.O200kBase })
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		c, err := newConversation(r, tc.codec)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		out := c.extractive(0, len(r.Items), new(filesMemo))
		if !strings.Contains(out, "- Decision: "+said) || !strings.Contains(out, "  - called exec_command(") {
			t.Errorf("%s: the edit's words are not a decision, or its call is gone:\n%s", tc.name, out)
		}
	}
}
