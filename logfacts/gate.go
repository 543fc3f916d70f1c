package logfacts

import (
	"bytes"
	"regexp"
	"strings"
)

// The rules are the regular expressions of logfacts.go; Go's regexp
// engine takes microseconds a line on them (tens on failingTest), so a
// tool output of megabytes would take seconds. What runs instead, with
// the same answers (gate_test.go checks them against the expressions):
// gates — a substring every match of an expression contains, looked for
// first, so that the expression runs only on the lines that have one —,
// errorish by hand, and failingTest one alternative at a time (each
// anchored or starting with a literal, which the engine finds fast).
// Every check is linear in its line.

// failingTestParts are failingTest's alternatives: a line matches
// failingTest when it matches one of them.
var failingTestParts = func() []*regexp.Regexp {
	var out []*regexp.Regexp
	for _, p := range []string{`--- FAIL: (\S+)`, `^FAILED (\S+)`, `^FAIL: (\S+)`, `^ERROR: (\S+)`, `✗ (\S.*)`,
		`^\s*(\S+) \.\.\. (?:FAIL|ERROR)`, `^test (\S+) \.\.\. FAILED`, `●\s+(\S.*\S)`} {
		out = append(out, regexp.MustCompile(p))
	}
	return out
}()

// mayFailTest: every match of failingTest contains FAIL, ERROR, ✗ or ●.
func mayFailTest(s string) bool {
	return strings.Contains(s, "FAIL") || strings.Contains(s, "ERROR") || strings.Contains(s, "✗") || strings.Contains(s, "●")
}

// isFailingTest is failingTest.MatchString(s).
func isFailingTest(s string) bool {
	if !mayFailTest(s) {
		return false
	}
	for _, re := range failingTestParts {
		if re.MatchString(s) {
			return true
		}
	}
	return false
}

// isSpaceRE is \s of Go's regexp: [\t\n\f\r ].
func isSpaceRE(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\f' || c == '\r' }

// isAssertion is assertion.MatchString(s). Every match contains
// _test., _spec., .py: or "panicked at", or starts (after ^\s*) with E
// and a space, Expected, Received, left:, right: or assert.
func isAssertion(s string) bool {
	rest := s
	for len(rest) > 0 && isSpaceRE(rest[0]) {
		rest = rest[1:]
	}
	may := strings.Contains(s, "_test.") || strings.Contains(s, "_spec.") || strings.Contains(s, ".py:") ||
		strings.Contains(s, "panicked at") ||
		(len(rest) > 1 && rest[0] == 'E' && isSpaceRE(rest[1])) ||
		strings.HasPrefix(rest, "Expected") || strings.HasPrefix(rest, "Received") ||
		strings.HasPrefix(rest, "left:") || strings.HasPrefix(rest, "right:") || strings.HasPrefix(rest, "assert")
	return may && assertion.MatchString(s)
}

// isCompilerError is compilerError.MatchString(s): every match contains
// one of its words or "--> ".
func isCompilerError(s string) bool {
	may := strings.Contains(s, "error") || strings.Contains(s, "undefined") || strings.Contains(s, "cannot") ||
		strings.Contains(s, "syntax") || strings.Contains(s, "expected") || strings.Contains(s, "invalid") ||
		strings.Contains(s, "--> ")
	return may && compilerError.MatchString(s)
}

// isFrame is pyFrame.MatchString(s) || goFrame.MatchString(s).
func isFrame(s string) bool {
	return (strings.Contains(s, `File "`) && pyFrame.MatchString(s)) || (strings.Contains(s, ".go:") && goFrame.MatchString(s))
}

// foldsOntoASCII: ſ and K (Kelvin) are the only runes that fold, under
// (?i), onto ASCII letters (s and k).
func foldsOntoASCII(s string) bool {
	return strings.Contains(s, "\u017f") || strings.Contains(s, "\u212a")
}

// isWordByte is \w (and \b's word character) of Go's regexp, on a byte
// lowered by lowerASCII: bytes of other runes are not.
func isWordByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_'
}

// lowerASCII returns s with its ASCII letters lowered (same length),
// written into buf when it is large enough.
func lowerASCII(s string, buf []byte) []byte {
	buf = append(buf[:0], s...)
	for i, c := range buf {
		if c >= 'A' && c <= 'Z' {
			buf[i] = c + 'a' - 'A'
		}
	}
	return buf
}

// errorishWords are errorish's alternatives that start with a word
// character: the word, whether a word boundary must precede it, and the
// word characters that may follow it before a boundary (nil: any, no
// boundary needed).
var errorishWords = []struct {
	word  []byte
	start bool
	tails []string
}{
	{[]byte("error"), false, []string{""}}, // \berror\b | \w+error\b: a boundary after
	{[]byte("exception"), true, []string{""}},
	{[]byte("traceback"), false, nil},
	{[]byte("panic"), true, []string{""}},
	{[]byte("panicked"), true, []string{""}},
	{[]byte("fail"), true, []string{"", "ed", "ure", "s"}},
	{[]byte("fatal"), true, []string{""}},
	{[]byte("assert"), true, []string{"", "ion"}},
	{[]byte("segmentation fault"), false, nil},
	{[]byte("undefined reference"), false, nil},
}

// isErrorish is errorish.MatchString(s); buf is scratch space.
func isErrorish(s string, buf *[]byte) bool {
	if foldsOntoASCII(s) {
		return errorish.MatchString(s)
	}
	*buf = lowerASCII(s, *buf)
	low := *buf
	for _, w := range errorishWords {
		for from := 0; ; {
			i := bytes.Index(low[from:], w.word)
			if i < 0 {
				break
			}
			i += from
			from = i + 1
			if w.start && i > 0 && isWordByte(low[i-1]) {
				continue
			}
			if w.tails == nil {
				return true
			}
			end := i + len(w.word)
			j := end
			for j < len(low) && isWordByte(low[j]) {
				j++
			}
			for _, t := range w.tails {
				if string(low[end:j]) == t {
					return true
				}
			}
		}
	}
	return false
}

// failingTestName is the name failingTest.FindStringSubmatch(s) captures
// ("" when it does not match): the match that starts first, of the first
// alternative at that start.
func failingTestName(s string) string {
	if !mayFailTest(s) {
		return ""
	}
	best, name := -1, ""
	for _, re := range failingTestParts {
		m := re.FindStringSubmatchIndex(s)
		if m != nil && (best < 0 || m[0] < best) {
			best, name = m[0], s[m[2]:m[3]]
		}
	}
	return name
}

// exitLiterals start exitLine's alternatives (lowered), each with what
// follows it before the status: \s* after <returncode>, [ :]* after
// "exit code" and "exit status", nothing after the last.
var exitLiterals = []struct {
	lit  []byte
	skip func(byte) bool
}{
	{[]byte("<returncode>"), isSpaceRE},
	{[]byte("exit code"), func(c byte) bool { return c == ' ' || c == ':' }},
	{[]byte("exit status"), func(c byte) bool { return c == ' ' || c == ':' }},
	{[]byte("process exited with code "), func(byte) bool { return false }},
}

// exitStatus is Exit: the status of exitLine's first match, found by
// looking for its literals (ASCII-lowered: text without ſ or K folds onto
// nothing else) and reading the number after each.
func exitStatus(text string) string {
	if foldsOntoASCII(text) {
		m := exitLine.FindStringSubmatch(text)
		for _, g := range m[min(len(m), 2):] {
			if g != "" {
				return g
			}
		}
		return ""
	}
	low := lowerASCII(text, nil)
	next := make([]int, len(exitLiterals)) // next occurrence of each at or after from
	for i, e := range exitLiterals {
		next[i] = index(low, e.lit, 0)
	}
	for {
		at, which := -1, -1
		for i, n := range next {
			if n >= 0 && (at < 0 || n < at) {
				at, which = n, i
			}
		}
		if at < 0 {
			return ""
		}
		e := exitLiterals[which]
		j := at + len(e.lit)
		for j < len(low) && e.skip(low[j]) {
			j++
		}
		k := j
		if k < len(low) && low[k] == '-' {
			k++
		}
		d := k
		for d < len(low) && low[d] >= '0' && low[d] <= '9' {
			d++
		}
		if d > k {
			return text[j:d]
		}
		next[which] = index(low, e.lit, at+1)
	}
}

// index is the position of the first lit in s at or after from, or -1.
func index(s, lit []byte, from int) int {
	if from > len(s) {
		return -1
	}
	i := bytes.Index(s[from:], lit)
	if i < 0 {
		return -1
	}
	return from + i
}
