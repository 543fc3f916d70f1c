package selective

import (
	"regexp"
	"strings"
	"sync/atomic"
)

// Gates for the digests' per-line expressions (digest.go): each returns
// false only for a line its expression cannot match, so the expression
// runs on the few lines that may match; a tool output of megabytes is
// read in linear time, at the speed of a byte scan (gate_test.go checks
// them against the expressions).

// isSpaceRE is \s of Go's regexp: [\t\n\f\r ].
func isSpaceRE(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\f' || c == '\r' }

// trimSpaceRE drops what ^\s* would match.
func trimSpaceRE(s string) string {
	for len(s) > 0 && isSpaceRE(s[0]) {
		s = s[1:]
	}
	return s
}

// mayLineNum: lineNumPrefix (^\s*(\d+)…) needs a digit first.
func mayLineNum(l string) bool {
	t := trimSpaceRE(l)
	return t != "" && t[0] >= '0' && t[0] <= '9'
}

// stripLineNumFast is stripLineNum.
func stripLineNumFast(l string) string {
	if !mayLineNum(l) {
		return l
	}
	return stripLineNum(counted(l))
}

// declarationWords: every alternative of declaration starts (after
// ^\s*) with one of these words, followed by no lowercase letter.
var declarationWords = map[string]bool{}

func init() {
	for _, w := range strings.Fields("var const let package import from func def async class type struct interface enum trait impl pub fn export default function module public private protected static #include #define") {
		declarationWords[w] = true
	}
}

// mayDeclaration: the line's first word (after ^\s*, lowercase letters,
// '#' first) is one of declarationWords.
func mayDeclaration(l string) bool {
	t := trimSpaceRE(l)
	n := 0
	if n < len(t) && t[n] == '#' {
		n++
	}
	for n < len(t) && t[n] >= 'a' && t[n] <= 'z' {
		n++
	}
	return declarationWords[t[:n]]
}

// isDeclaration is declaration.MatchString(l).
func isDeclaration(l string) bool { return mayDeclaration(l) && match(declaration, l) }

// mayGrepLine: grepLine's first group holds no colon, so the line's first
// colon is followed by a digit.
func mayGrepLine(l string) bool {
	i := strings.IndexByte(l, ':')
	return i >= 0 && i+1 < len(l) && l[i+1] >= '0' && l[i+1] <= '9'
}

// isGrepLine is grepLine.MatchString(l).
func isGrepLine(l string) bool { return mayGrepLine(l) && match(grepLine, l) }

// grepSubmatch is grepLine.FindStringSubmatch(l).
func grepSubmatch(l string) []string {
	if !mayGrepLine(l) {
		return nil
	}
	return grepLine.FindStringSubmatch(counted(l))
}

// isPathLine is pathLine.MatchString(t): a slash.
func isPathLine(t string) bool { return strings.IndexByte(t, '/') >= 0 && match(pathLine, t) }

// mayPassFail: passFailCount needs a digit, a space and a letter that
// starts one of its words (under (?i); 0xc5 starts ſ, which folds onto
// s), or ": " and a digit ("Tests run: 3").
func mayPassFail(l string) bool {
	for i := 0; i+2 < len(l); i++ {
		if l[i] >= '0' && l[i] <= '9' && l[i+1] == ' ' && strings.IndexByte("pfesxtPFESXT\xc5", l[i+2]) >= 0 ||
			l[i] == ':' && l[i+1] == ' ' && l[i+2] >= '0' && l[i+2] <= '9' {
			return true
		}
	}
	return false
}

// isPassFail is passFailCount.MatchString(l).
func isPassFail(l string) bool { return mayPassFail(l) && match(passFailCount, l) }

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
