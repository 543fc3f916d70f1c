package condense

import (
	"math/rand"
	"slices"
	"strings"
	"testing"
)

// noteResultRule is noteResult as first written: its regexp run over the
// whole rest of the text (seconds for megabytes), kept as the rule the
// linear noteResult must follow.
func noteResultRule(f *fileLog, text string) {
	n := 0
	for _, line := range strings.SplitN(text, "\n", 60) {
		for _, m := range pathToken.FindAllStringSubmatch(line, 3) {
			if strings.Contains(m[1], "/") {
				f.add(m[1], "found")
				n++
			}
		}
		if n > 40 {
			return
		}
	}
}

// TestNoteResultFollowsItsRule: the files noted of random outputs (paths,
// dots, delimiters, long outputs whose paths come late) are the rule's.
func TestNoteResultFollowsItsRule(t *testing.T) {
	pieces := []string{"a/b.go", "./x/y.py:12", "/abs/p.txt", "f.md", "'q/r.js'", "=s/t.rs", "(u/v.c)", " ", "\t", "\n", "\n\n",
		".", ".x", "+a.b", "é.a/b.c", "x", "foo", "1.2", "dir/", "://h/a.b", ":", "3"}
	rng := rand.New(rand.NewSource(37))
	for i := 0; i < 20000; i++ {
		var b strings.Builder
		for n := rng.Intn(1500); n >= 0; n-- {
			b.WriteString(pieces[rng.Intn(len(pieces))])
		}
		got, want := newFileLog(), newFileLog()
		got.noteResult(b.String())
		noteResultRule(want, b.String())
		if !slices.Equal(got.order, want.order) || got.n != want.n {
			t.Fatalf("%q: noted %q (%d), the rule %q (%d)", b.String(), got.order, got.n, want.order, want.n)
		}
	}
}
