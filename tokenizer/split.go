package tokenizer

import (
	"sync"
	"unicode"
	"unicode/utf8"
)

// The pre-tokenizer of tiktoken-go (github.com/tiktoken-go/tokenizer),
// written by hand. tiktoken-go cuts a text into pieces with a regular
// expression run by regexp2's generated code, then byte-pair encodes each
// piece; regexp2 costs about a microsecond and a half per short text, most
// of a cold count. split does what that generated code does, rune for rune,
// quirks included:
//
//   - \s is unicode.IsSpace; \p{L}, \p{N}, \p{Lu}… are Go's unicode tables;
//   - in ASCII, [^\r\n\p{L}\p{N}] and [^\s\p{L}\p{N}] are bitmaps that leave
//     out DEL (0x7f), so DEL matches no alternative: the expression skips
//     it and it counts no token;
//   - the contractions are case-insensitive, and 's also matches 'ſ (U+017F);
//   - \s*[\r\n]+ backtracks to the first \r or \n of the white space run
//     (the generated code searches forwards), so "\n\n  \n  x" starts with
//     the piece "\n\n", not "\n\n  \n";
//   - invalid UTF-8 is read as regexp2 reads it, []rune(s): each invalid byte
//     is U+FFFD.
//
// splitPatterns are the expressions it mirrors; newEncoder turns the fast
// path off for a codec whose expression is another one.
var splitPatterns = map[string]string{
	O200kBase:  `[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+`,
	CL100kBase: `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`,
}

// Character classes of the expressions, one bit each.
const (
	cL   = 1 << iota // \p{L}
	cN               // \p{N}
	cS               // \s
	cPre             // [^\r\n\p{L}\p{N}], the optional character before a word
	cPun             // [^\s\p{L}\p{N}], punctuation
	cUp              // [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}], o200k's upper case
	cLo              // [\p{Ll}\p{Lm}\p{Lo}\p{M}], o200k's lower case
)

// The generated code's ASCII bitmaps of [^\r\n\p{L}\p{N}] and
// [^\s\p{L}\p{N}] (bit c of lo for c < 64, bit c-64 of hi for the rest).
const (
	preLo, preHi = 0xfc00ffffffffdbff, 0x78000001f8000001
	punLo, punHi = 0xfc00fffeffffc1ff, 0x78000001f8000001
)

func inBitmap(c rune, lo, hi uint64) bool {
	if c < 64 {
		return lo&(1<<uint(c)) != 0
	}
	return hi&(1<<uint(c-64)) != 0
}

// classOfSlow is the class of r from the unicode tables, as the generated
// code tests it.
func classOfSlow(r rune) uint8 {
	var c uint8
	l, n, s := unicode.Is(unicode.L, r), unicode.Is(unicode.N, r), unicode.IsSpace(r)
	if l {
		c |= cL
	}
	if n {
		c |= cN
	}
	if s {
		c |= cS
	}
	if r < utf8.RuneSelf {
		if inBitmap(r, preLo, preHi) {
			c |= cPre
		}
		if inBitmap(r, punLo, punHi) {
			c |= cPun
		}
	} else {
		if !l && !n {
			c |= cPre
		}
		if !l && !n && !s {
			c |= cPun
		}
	}
	if unicode.In(r, unicode.Lu, unicode.Lt, unicode.Lm, unicode.Lo, unicode.M) {
		c |= cUp
	}
	if unicode.In(r, unicode.Ll, unicode.Lm, unicode.Lo, unicode.M) {
		c |= cLo
	}
	return c
}

// bmpClasses holds the class of every rune of the Basic Multilingual Plane
// (64 KB, filled on first use); the others are looked up in the tables.
var bmpClasses = sync.OnceValue(func() *[1 << 16]uint8 {
	var t [1 << 16]uint8
	for r := range t {
		if !utf8.ValidRune(rune(r)) {
			continue
		}
		t[r] = classOfSlow(rune(r))
	}
	return &t
})

// splitter cuts valid UTF-8 into the pieces of one encoding's expression.
type splitter struct {
	o200k   bool
	classes *[1 << 16]uint8
}

func newSplitter(encoding string) *splitter {
	return &splitter{o200k: encoding == O200kBase, classes: bmpClasses()}
}

func (sp *splitter) class(r rune) uint8 {
	if r < 1<<16 {
		return sp.classes[r]
	}
	return classOfSlow(r)
}

// runeAt decodes the rune of s at i (s is valid UTF-8).
func runeAt(s string, i int) (rune, int) {
	if c := s[i]; c < utf8.RuneSelf {
		return rune(c), 1
	}
	return utf8.DecodeRuneInString(s[i:])
}

// runeBefore returns the start of the rune of s that ends at i.
func runeBefore(s string, i int) int {
	if s[i-1] < utf8.RuneSelf {
		return i - 1
	}
	_, n := utf8.DecodeLastRuneInString(s[:i])
	return i - n
}

// run returns the end of the run of runes of class mask that starts at i.
func (sp *splitter) run(s string, i int, mask uint8) int {
	for i < len(s) {
		if c := s[i]; c < utf8.RuneSelf {
			// ASCII, read in place (runeAt is a call).
			if sp.classes[c]&mask == 0 {
				break
			}
			i++
			continue
		}
		r, n := runeAt(s, i)
		if sp.class(r)&mask == 0 {
			break
		}
		i += n
	}
	return i
}

// piece returns the end of the piece that starts at i, or -1 when no
// alternative matches there (the expression then skips the rune).
func (sp *splitter) piece(s string, i int) int {
	r, n := runeAt(s, i)
	c := sp.class(r)
	if sp.o200k {
		if c&(cPre|cUp|cLo) != 0 {
			if e := sp.o200kWord(s, i, c, n); e >= 0 {
				return e
			}
		}
	} else {
		if r == '\'' {
			if e := contraction(s, i); e > i {
				return e
			}
		}
		// [^\r\n\p{L}\p{N}]?\p{L}+
		if c&cL != 0 {
			return sp.run(s, i+n, cL)
		}
		if c&cPre != 0 && i+n < len(s) {
			if r2, n2 := runeAt(s, i+n); sp.class(r2)&cL != 0 {
				return sp.run(s, i+n+n2, cL)
			}
		}
	}
	// \p{N}{1,3}
	if c&cN != 0 {
		e := i + n
		for k := 1; k < 3 && e < len(s); k++ {
			r2, n2 := runeAt(s, e)
			if sp.class(r2)&cN == 0 {
				break
			}
			e += n2
		}
		return e
	}
	//  ?[^\s\p{L}\p{N}]+[\r\n]*, [\r\n/]* for o200k
	j := i
	if r == ' ' {
		j++
	}
	if e := sp.run(s, j, cPun); e > j {
		for e < len(s) && (s[e] == '\n' || s[e] == '\r' || sp.o200k && s[e] == '/') {
			e++
		}
		return e
	}
	if c&cS != 0 {
		return sp.space(s, i)
	}
	return -1
}

// o200kWord matches o200k's two word alternatives at i, whose rune (of
// class c, n bytes) may be the optional leading character:
//
//	[^\r\n\p{L}\p{N}]?[UPPER]*[LOWER]+('s|…)?
//	[^\r\n\p{L}\p{N}]?[UPPER]+[LOWER]*('s|…)?
//
// with the backtracking of the generated code: the optional character is
// taken first and given back if the rest fails; [UPPER]* gives back one
// rune at a time until [LOWER]+ matches (the two classes share \p{Lm},
// \p{Lo} and \p{M}). It returns -1 when neither matches.
func (sp *splitter) o200kWord(s string, i int, c uint8, n int) int {
	starts := [2]int{i, i}
	tries := starts[1:]
	if c&cPre != 0 {
		starts[0] = i + n
		tries = starts[:]
	}
	for _, start := range tries {
		j := sp.run(s, start, cUp)
		for k := j; ; k = runeBefore(s, k) {
			if e := sp.run(s, k, cLo); e > k {
				return contraction(s, e)
			}
			if k == start {
				break
			}
		}
	}
	for _, start := range tries {
		if j := sp.run(s, start, cUp); j > start {
			return contraction(s, sp.run(s, j, cLo))
		}
	}
	return -1
}

// contraction returns the end of (?i:'s|'t|'re|'ve|'m|'ll|'d) at e, or e.
// As regexp2 folds case, 's also matches 'ſ.
func contraction(s string, e int) int {
	if e+1 >= len(s) || s[e] != '\'' {
		return e
	}
	switch s[e+1] {
	case 'S', 'T', 's', 't', 'M', 'm', 'D', 'd':
		return e + 2
	case 'R', 'r', 'V', 'v':
		if e+2 < len(s) && s[e+2]|0x20 == 'e' {
			return e + 3
		}
	case 'L', 'l':
		if e+2 < len(s) && s[e+2]|0x20 == 'l' {
			return e + 3
		}
	case 0xc5: // ſ is C5 BF
		if e+2 < len(s) && s[e+2] == 0xbf {
			return e + 3
		}
	}
	return e
}

// space matches the white space alternatives at i, where s has a white
// space rune: \s*[\r\n]+ (backtracked to the run's first \r or \n, as the
// generated code does), \s+(?!\S), \s+.
func (sp *splitter) space(s string, i int) int {
	j, nl := i, -1
	for j < len(s) {
		r, n := runeAt(s, j)
		if sp.class(r)&cS == 0 {
			break
		}
		if nl < 0 && (r == '\n' || r == '\r') {
			nl = j
		}
		j += n
	}
	if nl >= 0 {
		e := nl + 1
		for e < len(s) && (s[e] == '\n' || s[e] == '\r') {
			e++
		}
		return e
	}
	if j == len(s) {
		return j
	}
	if last := runeBefore(s, j); last > i {
		return last
	}
	return j
}

// each calls f with each piece of s, in order (encoder.count is the same
// loop, unrolled).
func (sp *splitter) each(s string, f func(piece string)) {
	if !utf8.ValidString(s) {
		s = string([]rune(s))
	}
	for i := 0; i < len(s); {
		e := sp.piece(s, i)
		if e < 0 {
			_, n := runeAt(s, i)
			i += n
			continue
		}
		f(s[i:e])
		i = e
	}
}
