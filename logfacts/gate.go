package logfacts

import (
	"regexp"
	"strings"
	"sync/atomic"
)

// The rules are the regular expressions of logfacts.go; Go's regexp
// engine takes microseconds a line on them (tens on failingTest), so a
// tool output of megabytes would take seconds. What runs instead, with
// the same answers (gate_test.go checks them against the expressions):
// gates — a substring every match of an expression contains, looked for
// first, so that the expression runs only on the lines that have one —,
// errorish and exitLine by hand in one pass, and failingTest one
// alternative at a time, each behind its own literal. Every check is
// linear in its line.

// failingTestParts are failingTest's alternatives, each with a literal
// its matches hold (at the start of the line when prefix): a line
// matches failingTest when it matches one of them.
var failingTestParts = func() []failPart {
	var out []failPart
	for _, p := range []struct {
		re, lit string
		prefix  bool
	}{
		{`--- FAIL: (\S+)`, "--- FAIL: ", false}, {`^FAILED (\S+)`, "FAILED ", true}, {`^FAIL: (\S+)`, "FAIL: ", true},
		{`^ERROR: (\S+)`, "ERROR: ", true}, {`✗ (\S.*)`, "✗ ", false}, {`^\s*(\S+) \.\.\. (?:FAIL|ERROR)`, " ... ", false},
		{`^test (\S+) \.\.\. FAILED`, "test ", true}, {`●\s+(\S.*\S)`, "●", false},
	} {
		out = append(out, failPart{regexp.MustCompile(p.re), p.lit, p.prefix})
	}
	return out
}()

type failPart struct {
	re     *regexp.Regexp
	lit    string
	prefix bool
}

// may reports whether s holds the part's literal.
func (p failPart) may(s string) bool {
	if p.prefix {
		return strings.HasPrefix(s, p.lit)
	}
	return strings.Contains(s, p.lit)
}

// isFailingTest is failingTest.MatchString(s).
func isFailingTest(s string) bool {
	for _, p := range failingTestParts {
		if p.may(s) && match(p.re, s) {
			return true
		}
	}
	return false
}

// failingTestName is the name failingTest.FindStringSubmatch(s) captures
// ("" when it does not match): the match that starts first, of the first
// alternative at that start.
func failingTestName(s string) string {
	best, name := -1, ""
	for _, p := range failingTestParts {
		if !p.may(s) {
			continue
		}
		m := p.re.FindStringSubmatchIndex(counted(s))
		if m != nil && (best < 0 || m[0] < best) {
			best, name = m[0], s[m[2]:m[3]]
		}
	}
	return name
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
	return may && match(assertion, s)
}

// isCompilerError is compilerError.MatchString(s). Every alternative is
// anchored: s starts with "error", or with "--> " after spaces, or with a
// path ([\w./\\-]+) followed by ':' or '(' — and holds one of the words.
func isCompilerError(s string) bool {
	n := 0
	for n < len(s) && (isWordByte(lower(s[n])) || strings.IndexByte("./\\-", s[n]) >= 0) {
		n++
	}
	located := n > 0 && n < len(s) && (s[n] == ':' || s[n] == '(')
	may := strings.HasPrefix(s, "error") || strings.HasPrefix(trimSpace(s), "--> ") ||
		located && (strings.Contains(s, "error") || strings.Contains(s, "undefined") || strings.Contains(s, "cannot") ||
			strings.Contains(s, "syntax") || strings.Contains(s, "expected") || strings.Contains(s, "invalid"))
	return may && match(compilerError, s)
}

// trimSpace drops what ^\s* matches.
func trimSpace(s string) string {
	for len(s) > 0 && isSpaceRE(s[0]) {
		s = s[1:]
	}
	return s
}

// isFrame is pyFrame.MatchString(s) || goFrame.MatchString(s).
func isFrame(s string) bool {
	return (strings.Contains(s, `File "`) && match(pyFrame, s)) || (strings.Contains(s, ".go:") && match(goFrame, s))
}

// foldsOntoASCII: ſ and K (Kelvin) are the only runes that fold, under
// (?i), onto ASCII letters (s and k).
func foldsOntoASCII(s string) bool {
	return strings.Contains(s, "\u017f") || strings.Contains(s, "\u212a")
}

// isWordByte is \w (and \b's word character) of Go's regexp, on a byte
// lowered by lower: bytes of other runes are not.
func isWordByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_'
}

// lower lowers an ASCII letter.
func lower(c byte) byte {
	if c >= 'A' && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

// hasPrefixFold reports whether s starts with lit (lowercase ASCII),
// ASCII letters compared without case.
func hasPrefixFold(s, lit string) bool {
	if len(s) < len(lit) {
		return false
	}
	for i := 0; i < len(lit); i++ {
		if lower(s[i]) != lit[i] {
			return false
		}
	}
	return true
}

// errorishWords are errorish's alternatives that start with a word
// character: the word, whether a word boundary must precede it, and the
// word characters that may follow it before a boundary (nil: any, no
// boundary needed).
var errorishWords = []struct {
	word  string
	start bool
	tails []string
}{
	{"error", false, []string{""}}, // \berror\b | \w+error\b: a boundary after
	{"exception", true, []string{""}},
	{"traceback", false, nil},
	{"panic", true, []string{""}},
	{"panicked", true, []string{""}},
	{"fail", true, []string{"", "ed", "ure", "s"}},
	{"fatal", true, []string{""}},
	{"assert", true, []string{"", "ion"}},
	{"segmentation fault", false, nil},
	{"undefined reference", false, nil},
}

// errorishByFirst lists, for each byte, the errorishWords it starts.
var errorishByFirst = func() (t [256][]int) {
	for i, w := range errorishWords {
		for _, c := range []byte{w.word[0], w.word[0] - 'a' + 'A'} {
			t[c] = append(t[c], i)
		}
	}
	return t
}()

// isErrorish is errorish.MatchString(s), in one pass over s.
func isErrorish(s string) bool {
	if foldsOntoASCII(s) {
		return match(errorish, s)
	}
	for i := 0; i < len(s); i++ {
		for _, k := range errorishByFirst[s[i]] {
			w := &errorishWords[k]
			if len(s)-i < len(w.word) || lower(s[i+1]) != w.word[1] || !hasPrefixFold(s[i:], w.word) ||
				w.start && i > 0 && isWordByte(lower(s[i-1])) {
				continue
			}
			if w.tails == nil {
				return true
			}
			end := i + len(w.word)
			j := end
			for j < len(s) && isWordByte(lower(s[j])) {
				j++
			}
			for _, t := range w.tails {
				if len(t) == j-end && hasPrefixFold(s[end:j], t) {
					return true
				}
			}
		}
	}
	return false
}

// exitLiterals start exitLine's alternatives (lowered), each with what
// follows it before the status: \s* after <returncode>, [ :]* after
// "exit code" and "exit status", nothing after the last.
var exitLiterals = []struct {
	lit  string
	skip func(byte) bool
}{
	{"<returncode>", isSpaceRE},
	{"exit code", func(c byte) bool { return c == ' ' || c == ':' }},
	{"exit status", func(c byte) bool { return c == ' ' || c == ':' }},
	{"process exited with code ", func(byte) bool { return false }},
}

// exitStatus is Exit: the status of exitLine's first match, found in one
// pass by looking for its literals (ASCII letters without case: text
// without ſ or K folds onto nothing else) and reading the number after
// each.
func exitStatus(text string) string {
	if foldsOntoASCII(text) {
		m := exitLine.FindStringSubmatch(counted(text))
		for _, g := range m[min(len(m), 2):] {
			if g != "" {
				return g
			}
		}
		return ""
	}
	for i := 0; i < len(text); i++ {
		if c := lower(text[i]); c != '<' && c != 'e' && c != 'p' {
			continue
		}
		for _, e := range exitLiterals {
			if !hasPrefixFold(text[i:], e.lit) {
				continue
			}
			j := i + len(e.lit)
			for j < len(text) && e.skip(text[j]) {
				j++
			}
			k := j
			if k < len(text) && text[k] == '-' {
				k++
			}
			d := k
			for d < len(text) && text[d] >= '0' && text[d] <= '9' {
				d++
			}
			if d > k {
				return text[j:d]
			}
		}
	}
	return ""
}

// expressionBytes counts the bytes handed to the expressions behind the
// gates: the test that keeps the checks linear reads it (a gate or a
// memo lost shows as megabytes read by expressions).
var expressionBytes atomic.Int64

// counted counts s as read by an expression and returns it.
func counted(s string) string {
	expressionBytes.Add(int64(len(s)))
	return s
}

// match is re.MatchString(s), counted.
func match(re *regexp.Regexp, s string) bool { return re.MatchString(counted(s)) }
