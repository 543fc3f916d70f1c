package logfacts

import (
	"math/rand"
	"strings"
	"testing"
)

// fragments are the pieces of the lines the gates are checked on: the
// rules' words and punctuation in several cases, spaces, runes that fold
// onto ASCII, and filler.
var fragments = []string{
	"error", "Error", "ERROR", "errors", "TypeError", "exception", "Exception", "traceback", "Traceback (most recent call last):",
	"panic", "panic:", "panicked", "panicked at", "fail", "failed", "FAILED", "failure", "fails", "failx", "FAIL", "FAIL: ",
	"--- FAIL: ", "fatal", "assert", "assertion", "asserts", "segmentation fault", "undefined reference", "undefined",
	"cannot", "syntax", "expected", "invalid", "Expected", "Expected value:", "Received", "left:", "right:", "E", "E  ",
	"_test.go:", "_test.py:", "_spec.ts:", ".py:", ".go:", `File "`, `", line `, "-->", "--> ", " ... ", "test ",
	"✗ ", "●", "● ", "ſ", "K", "k", "s", "<returncode>", "</returncode>", "exit code", "exit status", "Exit Code",
	"Process exited with code ", "process EXITED with code ", ":", ": ", " ", "  ", "\t", "\r", "\f", "-", "_", ".", "/",
	"(", ")", ",", "[", "]", "0", "12", "-3", "+0x1f", "x", "foo", "a/b.go", "main.go:12:5: ", "src/a.ts(3,5): ", "é", "日本",
	// whole pieces of each rule, so that long alternatives are drawn too
	"a_spec.ts:12: x", "pkg/x_test.go:3: bad", "tests/t.py:7: AssertionError", "  File \"/app/x.py\", line 3, in f",
	"\t/app/parse.go:40 +0x1d", "\tmain.go:7", "x.go:1:2: error: y", "x.c:3: fatal error: z", "a.ts(3,5): error TS1: q",
	"  --> src/main.rs:3:5", "error[E0425]: v", "test a::b ... FAILED", "x ... ERROR", "x ... FAIL", "✗ it works",
	"● parser › neg", "assert x == y", "assertion failed", "thread 'a' panicked at src/a.rs:1:2:", "<returncode>  -12",
	"exit status: 3", "Exit Code 0", "Process exited with code 137", "ſegmentation fault", "tracebacK", "paſſed",
}

func randomLine(rng *rand.Rand) string {
	var b strings.Builder
	for n := rng.Intn(8); n >= 0; n-- {
		b.WriteString(fragments[rng.Intn(len(fragments))])
	}
	return b.String()
}

// checkLine compares every fast check with its rule on s.
func checkLine(t *testing.T, s string) {
	t.Helper()
	if got, want := isErrorish(s), errorish.MatchString(s); got != want {
		t.Errorf("isErrorish(%q) = %v, errorish %v", s, got, want)
	}
	if got, want := isFailingTest(s), failingTest.MatchString(s); got != want {
		t.Errorf("isFailingTest(%q) = %v, failingTest %v", s, got, want)
	}
	want := ""
	if m := failingTest.FindStringSubmatch(s); m != nil {
		for _, g := range m[1:] {
			if g != "" {
				want = g
				break
			}
		}
	}
	if got := failingTestName(s); got != want {
		t.Errorf("failingTestName(%q) = %q, failingTest %q", s, got, want)
	}
	if got, want := isAssertion(s), assertion.MatchString(s); got != want {
		t.Errorf("isAssertion(%q) = %v, assertion %v", s, got, want)
	}
	if got, want := isCompilerError(s), compilerError.MatchString(s); got != want {
		t.Errorf("isCompilerError(%q) = %v, compilerError %v", s, got, want)
	}
	if got, want := isFrame(s), pyFrame.MatchString(s) || goFrame.MatchString(s); got != want {
		t.Errorf("isFrame(%q) = %v, want %v", s, got, want)
	}
	wantExit := ""
	if m := exitLine.FindStringSubmatch(s); m != nil {
		for _, g := range m[2:] {
			if g != "" {
				wantExit = g
				break
			}
		}
	}
	if got := exitStatus(s); got != wantExit {
		t.Errorf("exitStatus(%q) = %q, exitLine %q", s, got, wantExit)
	}
}

// TestFastChecksAreTheRules: the gates, errorish by hand, failingTest by
// alternative and exitStatus answer what the regular expressions of
// logfacts.go answer, on lines built of the rules' own pieces.
func TestFastChecksAreTheRules(t *testing.T) {
	rng := rand.New(rand.NewSource(37))
	for i := 0; i < 20000 && !t.Failed(); i++ {
		checkLine(t, randomLine(rng))
	}
}

func FuzzFastChecksAreTheRules(f *testing.F) {
	rng := rand.New(rand.NewSource(1))
	for i := 0; i < 50; i++ {
		f.Add(randomLine(rng))
	}
	f.Fuzz(func(t *testing.T, s string) { checkLine(t, s) })
}

// pathological are outputs of about 1 MB built to be slow: identical
// lines (plain, or an error), one line, distinct plain lines.
func pathological() map[string]string {
	var distinct strings.Builder
	for i := 0; distinct.Len() < 1<<20; i++ {
		distinct.WriteString("2026-11-28 INFO worker-" + strings.Repeat("x", i%50) + " heartbeat ok queue=17\n")
	}
	return map[string]string{
		"repeated":       strings.Repeat("2026-11-28T04:43:26Z INFO worker-3 heartbeat ok queue=17 latency=3ms\n", 1<<20/70),
		"repeated error": strings.Repeat("--- FAIL: TestParse (0.00s) error: assert x == y failed\n", 1<<20/56),
		"one line":       strings.Repeat("abcd efgh error ", 1<<20/16),
		"distinct":       distinct.String(),
	}
}

// TestRulesReadFewBytes: on pathological outputs of a megabyte, the
// expressions read a few hundred bytes (a repeated line once; lines
// without the gates' literals never): the work stays linear and small
// whatever the output, which a lost gate or memo would break.
func TestRulesReadFewBytes(t *testing.T) {
	for name, s := range pathological() {
		before := expressionBytes.Load()
		KeyLines(s, 4)
		Exit(s)
		FailingTests(s)
		if read := expressionBytes.Load() - before; read > 4096 {
			t.Errorf("%s: the expressions read %d bytes of %d", name, read, len(s))
		}
	}
}
