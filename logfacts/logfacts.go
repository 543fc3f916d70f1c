// Package logfacts finds, in a tool's output, the lines an agent must not
// lose when the output itself is condensed away: failing tests and their
// assertion lines, panics and the last frames of tracebacks, compiler
// errors with their file:line, error lines, and the exit status.
//
// It is the one set of rules both digests (package selective) and
// extractive summaries (package condense) use, so what a digest keeps and
// what a summary keeps cannot drift apart.
package logfacts

import (
	"regexp"
	"strings"
)

var (
	// errorish: a line that says something went wrong.
	errorish = regexp.MustCompile(`(?i)(\berror\b|\w+error\b|\bexception\b|traceback|\bpanic\b|\bpanicked\b|\bfail(ed|ure|s)?\b|\bfatal\b|\bassert(ion)?\b|segmentation fault|undefined reference)`)
	// assertion lines of test runners: Go's "x_test.go:42: got 3 want 4",
	// pytest's "E   assert 3 == 4" and "x.py:12: AssertionError", jest's
	// "Expected:"/"Received:", cargo's "panicked at", "left:"/"right:".
	assertion = regexp.MustCompile(`^\s*(?:[\w./-]+_test\.go:\d+: \S|[\w./-]+_(?:test|spec)\.\w+:\d+: \S|E\s{2,}\S|[\w./-]+\.py:\d+: \w*(?:Error|Exception)|Expected(?: value)?:\s|Received(?: value)?:\s|left:\s|right:\s|.*panicked at\b|assert(?:ion)?\b.*(?:==|!=|failed))`)
	// failing test names.
	failingTest = regexp.MustCompile(`(?:--- FAIL: (\S+)|^FAILED (\S+)|^FAIL: (\S+)|^ERROR: (\S+)|✗ (\S.*)|^\s*(\S+) \.\.\. (?:FAIL|ERROR)|^test (\S+) \.\.\. FAILED|●\s+(\S.*\S))`)
	// compiler errors with a location: gcc/clang/go/tsc/rustc.
	compilerError = regexp.MustCompile(`^(?:[\w./\\-]+\.\w+:\d+(?::\d+)?:\s*(?:fatal\s+)?(?:error|undefined|cannot|syntax|expected|invalid)|[\w./\\-]+\.\w+\(\d+,\d+\): error|\s*--> [\w./\\-]+:\d+:\d+|error(?:\[\w+\])?:\s)`)
	// frames of tracebacks and panics.
	pyFrame = regexp.MustCompile(`^\s*File "[^"]+", line \d+`)
	goFrame = regexp.MustCompile(`^\s+[\w./-]+\.go:\d+(?: \+0x[0-9a-f]+)?$`)
	// exit statuses.
	exitLine = regexp.MustCompile(`(?i)(<returncode>\s*(-?\d+)|exit (?:code|status)[ :]*(-?\d+)|Process exited with code (-?\d+))`)
)

// IsKey reports whether line is one to keep: an error line, a failing
// test, an assertion line, a compiler error or a panic.
func IsKey(line string) bool {
	return isErrorish(line) || isAssertion(line) || isCompilerError(line) || isFailingTest(line)
}

// FailingTests returns the names of the failing tests text reports, in
// order, without repeats.
func FailingTests(text string) []string {
	var out []string
	seen := map[string]bool{}
	read := map[string]bool{} // a line repeated names nothing new
	for _, l := range strings.Split(text, "\n") {
		t := strings.TrimSpace(l)
		if read[t] {
			continue
		}
		read[t] = true
		if g := failingTestName(t); g != "" && !seen[g] {
			seen[g] = true
			out = append(out, g)
		}
	}
	return out
}

// Exit returns the exit status text reports ("" when none).
func Exit(text string) string { return exitStatus(text) }

// KeyLines returns at most max lines of text worth keeping, in order and
// trimmed, without repeats: failing tests and their assertion lines,
// compiler errors, panics, the last frame of each traceback and goroutine
// trace before its error, then other error lines. Failing tests,
// assertions, compiler errors and panics come before plain error lines
// when max forces a choice.
func KeyLines(text string, max int) []string {
	lines := strings.Split(text, "\n")
	type pick struct {
		at   int
		line string
		rank int // 0: precise (test, assertion, compiler, panic, frame); 1: error word
	}
	var picks []pick
	seen := map[string]bool{}
	add := func(i int, rank int) {
		t := strings.TrimSpace(lines[i])
		if t == "" || seen[t] {
			return
		}
		seen[t] = true
		picks = append(picks, pick{i, t, rank})
	}
	lastFrame := -1
	// A line's kind depends on its text alone: a line repeated is
	// classified once.
	kinds := map[string]lineKind{}
	for i, l := range lines {
		kind, ok := kinds[l]
		if !ok {
			kind = classify(l)
			kinds[l] = kind
		}
		switch kind {
		case frameLine:
			lastFrame = i
			continue
		case preciseLine:
			add(i, 0)
		case errorLine:
			// A traceback ends with its last frame and the error: keep
			// the frame that says where.
			if lastFrame >= 0 && i-lastFrame <= 2 {
				add(lastFrame, 0)
			}
			add(i, 1)
		default:
			continue
		}
		lastFrame = -1
	}
	if len(picks) > max {
		kept := picks[:0:0]
		for rank := 0; rank <= 1 && len(kept) < max; rank++ {
			for _, p := range picks {
				if p.rank == rank && len(kept) < max {
					kept = append(kept, p)
				}
			}
		}
		// Back into text order.
		for i := 1; i < len(kept); i++ {
			for j := i; j > 0 && kept[j].at < kept[j-1].at; j-- {
				kept[j], kept[j-1] = kept[j-1], kept[j]
			}
		}
		picks = kept
	}
	out := make([]string, len(picks))
	for i, p := range picks {
		out[i] = p.line
	}
	return out
}

// lineKind is what KeyLines makes of a line.
type lineKind uint8

const (
	otherLine   lineKind = iota
	frameLine            // a frame of a traceback or goroutine trace
	preciseLine          // a failing test, assertion, compiler error or panic
	errorLine            // an error word
)

// classify returns the kind of line l.
func classify(l string) lineKind {
	t := strings.TrimSpace(l)
	switch {
	case isFrame(l):
		return frameLine
	case isFailingTest(t) || isAssertion(l) || isCompilerError(l) || strings.HasPrefix(t, "panic:"):
		return preciseLine
	case isErrorish(t):
		return errorLine
	}
	return otherLine
}
