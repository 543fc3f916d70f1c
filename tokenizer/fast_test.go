package tokenizer

import (
	"math/rand"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/dlclark/regexp2/v2"
)

var encodingNames = []string{O200kBase, CL100kBase}

var libSplit = map[string]func() *regexp2.Regexp{
	O200kBase:  sync.OnceValue(func() *regexp2.Regexp { return regexp2.MustCompile(splitPatterns[O200kBase], regexp2.None) }),
	CL100kBase: sync.OnceValue(func() *regexp2.Regexp { return regexp2.MustCompile(splitPatterns[CL100kBase], regexp2.None) }),
}

// libPieces cuts s with the expression tiktoken-go uses (regexp2 runs the
// same generated code for it), as tiktoken-go does.
func libPieces(t testing.TB, encoding, s string) []string {
	re := libSplit[encoding]()
	var out []string
	m, err := re.FindStringMatch(s)
	for ; m != nil && err == nil; m, err = re.FindNextMatch(m) {
		out = append(out, m.String())
	}
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// checkFast compares the fast path with tiktoken-go on s: the pieces with
// the library's expression, the count with the library's codec.
func checkFast(t testing.TB, s string) {
	t.Helper()
	for _, name := range encodingNames {
		enc := getEncoder(name)
		if enc.split == nil {
			t.Fatalf("%s: fast path off", name)
		}
		want := countCodec(enc.lib, s)
		got, fast := enc.count(s)
		if !fast {
			t.Fatalf("%s: %q not counted by the fast path", name, s)
		}
		if got != want {
			var pieces []string
			enc.split.each(s, func(p string) { pieces = append(pieces, p) })
			t.Fatalf("%s: %q: fast count %d, tiktoken-go %d\nfast pieces %q\nlib pieces  %q", name, s, got, want, pieces, libPieces(t, name, s))
		}
		// Again: now the pieces come from the cache of counts.
		if again, _ := enc.count(s); again != want {
			t.Fatalf("%s: %q: counted again (pieces cached) %d, tiktoken-go %d", name, s, again, want)
		}
		if len(s) <= 4096 {
			var pieces []string
			enc.split.each(s, func(p string) { pieces = append(pieces, p) })
			if lib := libPieces(t, name, s); !equalStrings(pieces, lib) {
				t.Fatalf("%s: %q: fast pieces %q\nlib pieces %q", name, s, pieces, lib)
			}
		}
	}
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// edgeCases are the rules of the two expressions one by one, with the
// quirks of the generated code.
var edgeCases = []string{
	"", "a", " ", "hello world", "tiktoken is great!", "ping 123", "pong",
	// contractions, both cases, after words, capitals and alone
	"don't", "DON'T", "it's", "IT'S", "we're", "WE'RE", "I've", "I'VE", "I'm", "I'M", "we'll", "WE'LL", "he'd", "HE'D",
	"'s", "'S", "'t", "'re", "'Re", "'rE", "'ve", "'m", "'ll", "'lL", "'Ll", "'d", "'x", "'", "''s", "'sup", "'ll've",
	"ABC's", "abc'S", "AbC'll", "x'r", "x'v", "x'l", "x'le", "'ſ", "don'ſ", "DON'ſt", "K'k", "'\u212a",
	// digits
	"1", "12", "123", "1234", "1234567", "a1b22c333d4444", " 123", "-42", "3.14159", "١٢٣٤", "Ⅻ", "½¾", "x²³",
	// white space
	"  x", "   x", "a  b", "a   b", "  ", "\t\tx", "x  ", "x \n", "\n", "\n\n", "\r\n", "\r\n\r\n", "a\r\n\r\nb",
	"\n\n  \n  x", "  \n\n  \n  x", " \n \n", "a \n\t\n b", "x\n ", "x\n  y", "\u00a0x", "x\u00a0\u00a0y", "\u2028",
	"\u0085x", "x\u3000y", "\v\f", " \t \r \n ",
	// punctuation
	"!!", "!!\n", "!!\n\n", "...\r\n", " ->\n\n", " !", "  !", "x!y", "}\n}\n", "a/b", "!/", "!\n/", "!\n/\n/x",
	"http://x.y/z", "//comment", " // c\n", "*/\n/*", "\\n", "$$\n$", "@@ -1,3 +1,4 @@\n",
	// case classes (o200k)
	"Hello", "HELLO", "HELLOworld", "HelloWorld", "hELLO", "ΑΒΓαβγ", "Ǆǅǆ", "ʰʰx", "xʰ", "漢字", "漢字'S", "かなカナ",
	"Ab\u0301c", "\u0301", "x\u0301y", " \u0301", "!\u0301a", "A\u0301", "\u0301A", "ǅA", "AǅB", "Aʰ", "ʰA",
	"𝐀𝐁𝐂𝐚𝐛", "𝐀", " 𝐚", "Σ's", "ΣΣ'LL",
	// DEL and controls
	"\x7f", "a\x7fb", " \x7f", "\x7f\x7f", "!\x7f!", "\x00\x01", "a\x00b", "\x1b[31mred\x1b[0m",
	// invalid UTF-8
	"\xff", "x\xffy", "\xc3", "\xe2\x82", "ok \xf0\x9f", "'\xc5", "\xed\xa0\x80",
	// mixed
	"func main() {\n\tfmt.Println(\"hi\")\n}\n", "ERROR: 2026-11-28T04:43:26Z worker-3 queue=17\n", "👍🏽 emoji 🚀!",
	"Привет, мир!", "مرحبا بالعالم", "नमस्ते", "\ufeffBOM", "\ufffd", "a\u200db",
}

func TestFastCountEdgeCases(t *testing.T) {
	for _, s := range edgeCases {
		checkFast(t, s)
	}
}

// TestFastCountAllASCIIPairs compares every ASCII character alone and in
// pairs and triples with a letter, a space and a newline.
func TestFastCountAllASCIIPairs(t *testing.T) {
	for a := 0; a < 128; a++ {
		for b := 0; b < 128; b++ {
			checkFast(t, string([]byte{byte(a), byte(b)}))
		}
		for _, ctx := range []string{"x%cy", " %c ", "\n%c\n", "A%c'S", "%c/", "%c\n/"} {
			checkFast(t, strings.Replace(ctx, "%c", string(rune(a)), 1))
		}
	}
}

// tricky are runes of every class the expressions tell apart.
var tricky = []string{
	"a", "b", "z", "A", "Z", "s", "S", "t", "r", "e", "E", "l", "L", "m", "d", "v", "0", "7", " ", " ", " ", "\n", "\r", "\t",
	"\v", "\f", "'", "'", "!", "/", ".", "-", "_", "\"", "\x7f", "\x00", "\x1b", "ſ", "\u212a", "\u0085", "\u00a0", "\u2028",
	"\u3000", "\u0301", "\u20dd", "ǅ", "ʰ", "漢", "か", "Σ", "σ", "ß", "𝐀", "𝐚", "١", "Ⅻ", "½", "²", "€", "👍", "\ufffd", "\xff",
	"\xc5", "\u200d", "\ufeff",
}

// TestFastCountRandom compares random strings of tricky runes.
func TestFastCountRandom(t *testing.T) {
	rng := rand.New(rand.NewSource(7))
	n := 20000
	if testing.Short() {
		n = 2000
	}
	for i := 0; i < n; i++ {
		var b strings.Builder
		for k := rng.Intn(24); k > 0; k-- {
			b.WriteString(tricky[rng.Intn(len(tricky))])
		}
		checkFast(t, b.String())
	}
}

// TestFastCountLongPieces compares pieces of many tokens, merged by
// scanning (under 96 bytes) and with the heap (from 96), words that are
// random and words built of common syllables.
func TestFastCountLongPieces(t *testing.T) {
	rng := rand.New(rand.NewSource(11))
	syllables := []string{"in", "ter", "na", "tion", "al", "iz", "a", "ble", "re", "con", "de", "st", "ing", "ed", "x", "q", "zz"}
	for i := 0; i < 3000; i++ {
		var b strings.Builder
		size := 1 + rng.Intn(300)
		for b.Len() < size {
			switch i % 3 {
			case 0:
				b.WriteString(syllables[rng.Intn(len(syllables))])
			case 1:
				b.WriteByte(byte('a' + rng.Intn(26)))
			default:
				b.WriteString([]string{"=", "-", "*", "#", "ab", "\\u00", "0x"}[rng.Intn(7)])
			}
		}
		checkFast(t, b.String())
		checkFast(t, " "+strings.ToUpper(b.String()))
	}
	for _, s := range adversarial() {
		checkFast(t, s[:min(len(s), 20000)])
	}
}

// TestFastCountCorpus compares every text of the shared corpus, and checks
// that the fast path, not tiktoken-go's codec, counted all of them.
func TestFastCountCorpus(t *testing.T) {
	texts := corpusTexts(t)
	c := New(Options{})
	ascii := 0
	for _, s := range texts {
		for _, name := range encodingNames {
			enc := getEncoder(name)
			got, fast := enc.count(s)
			if want := countCodec(enc.lib, s); got != want || !fast {
				t.Fatalf("%s: text of %d bytes: fast count %d (fast path %v), tiktoken-go %d", name, len(s), got, fast, want)
			}
			c.Text(name, s)
		}
		if isASCII(s) {
			ascii++
		}
	}
	if n := c.slowTexts.Load(); n != 0 {
		t.Fatalf("%d segments of the corpus counted by tiktoken-go's codec, not the fast path", n)
	}
	t.Logf("%d corpus texts (%d ASCII) counted exactly by the fast path", len(texts), ascii)
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// FuzzFastCountIsTiktoken: the fast count is tiktoken-go's, for any text.
func FuzzFastCountIsTiktoken(f *testing.F) {
	for _, s := range edgeCases {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		checkFast(t, s)
	})
}
