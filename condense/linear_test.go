package condense

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math/rand"
	"slices"
	"strings"
	"testing"

	"github.com/condense-proxy/condense-proxy/tokenizer"
	"github.com/condense-proxy/condense-proxy/view"
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

// fitSummaryRule is fitSummary as first written (its lines split into a
// slice of strings), kept as the rule fitSummary must follow.
func fitSummaryRule(text string, maxTokens, factTokens int) string {
	maxChars, factChars := maxTokens*3, max(factTokens, maxTokens)*3
	if len(text) <= maxChars {
		return text
	}
	body, files, hasFiles := strings.Cut(text, "## Files\n")
	if hasFiles {
		files = "## Files\n" + files
		if len(files) > factChars/3 {
			files = shorten(files, factChars/3) + "\n"
		}
	}
	lines := strings.Split(strings.TrimRight(body, "\n"), "\n")
	const omitted = "[… %d lines of calls and results omitted: their originals are behind this summary's id …]\n"
	room := factChars - len(files) - len(omitted)
	say := maxChars - len(files) - len(omitted) // the assistant's other words fit here
	kept := 0
	keep := make([]bool, len(lines))
	ranks := make([]int8, len(lines))
	for i, l := range lines {
		ranks[i] = int8(lineRank(l))
	}
	seen := map[string]bool{}
	for rank := int8(0); rank <= assistantRank; rank++ { // never the calls or other results
		for i, l := range lines {
			if keep[i] || ranks[i] != rank {
				continue
			}
			var errs []string
			if rank == errorRank {
				// An error line repeated step after step is kept once.
				if l, errs = newErrors(l, seen); l == "" {
					continue
				}
			}
			if len(l)+1 > room || (rank == assistantRank && kept+len(l)+1 > say) {
				continue
			}
			for _, e := range errs {
				seen[e] = true
			}
			lines[i] = l
			keep[i] = true
			room -= len(l) + 1
			kept += len(l) + 1
		}
	}
	var b strings.Builder
	dropped := 0
	for i, l := range lines {
		if keep[i] {
			b.WriteString(l)
			b.WriteByte('\n')
		} else {
			dropped++
		}
	}
	if dropped > 0 {
		fmt.Fprintf(&b, omitted, dropped)
	}
	b.WriteString(files)
	return b.String()
}

// TestFitSummaryFollowsItsRule: on random extractive summaries (every kind
// of line, repeated error lines, a Files section or none, empty lines,
// bounds from nothing to more than the text), fitSummary returns what the
// rule returns.
func TestFitSummaryFollowsItsRule(t *testing.T) {
	lines := []string{"- User: fix the build", "- System note: be brief", "    → bash: ok | (3 lines)",
		"    → bash: FAIL | exit 1 | ! FAIL TestX (9 lines)", "    → bash: x | ! panic: boom | (2 lines)",
		"    → bash: y | exit 1 | ! panic: boom | ! FAIL TestY | (4 lines)", "    → bash: z | exit 2 | (1 lines)",
		"- Assistant: Reading the log.", "  - called bash(command=go test)", "[marker]", "", "  ", "- User: é" + strings.Repeat("x", 40)}
	rng := rand.New(rand.NewSource(37))
	for i := 0; i < 20000; i++ {
		var b strings.Builder
		for n := rng.Intn(60); n > 0; n-- {
			b.WriteString(lines[rng.Intn(len(lines))])
			b.WriteByte('\n')
		}
		if rng.Intn(2) == 0 {
			fmt.Fprintf(&b, "## Files\n- read: a/b.go%s\n", strings.Repeat(", c/d.go", rng.Intn(30)))
		}
		for range rng.Intn(3) {
			b.WriteByte('\n')
		}
		text, max, facts := b.String(), rng.Intn(400), 0
		if rng.Intn(2) == 0 {
			facts = max + rng.Intn(400)
		}
		if got, want := fitSummary(text, max, facts), fitSummaryRule(text, max, facts); got != want {
			t.Fatalf("fitSummary(%q, %d, %d) = %q, the rule %q", text, max, facts, got, want)
		}
	}
}

// hashItemsRule is hashItems as first written (a write per item and per
// separator), kept as the rule hashItems must follow.
func hashItemsRule(r *view.Request, from, to int) string {
	h := sha256.New()
	for i := from; i < to; i++ {
		if it := r.Items[i]; it.Start < it.End {
			h.Write(r.Body[it.Start:it.End])
		}
		h.Write(zero[:])
	}
	return hex.EncodeToString(h.Sum(nil)[:16])
}

// randomItems returns a body of n items of random sizes (from nothing to
// more than hashItems' buffer), joined by random separators, with their
// spans.
func randomItems(rng *rand.Rand, n int) *view.Request {
	r := &view.Request{}
	var b []byte
	for i := 0; i < n; i++ {
		b = append(b, []string{",", ", ", "\n ,\t"}[rng.Intn(3)]...)
		size := []int{0, 1, 7, 40, 300, 8 << 10, 9000, 20000}[rng.Intn(8)] + rng.Intn(3)
		it := view.Item{Start: len(b)}
		for j := 0; j < size; j++ {
			b = append(b, byte('a'+rng.Intn(26)))
		}
		it.End = len(b)
		if size == 0 && rng.Intn(2) == 0 {
			it.Start, it.End = it.End, it.Start-1 // no raw JSON at all
		}
		r.Items = append(r.Items, it)
	}
	r.Body = b
	return r
}

// TestHashItemsFollowsItsRule: the content hash of random ranges of
// random items is the rule's.
func TestHashItemsFollowsItsRule(t *testing.T) {
	rng := rand.New(rand.NewSource(37))
	for i := 0; i < 300; i++ {
		r := randomItems(rng, 1+rng.Intn(60))
		from := rng.Intn(len(r.Items))
		to := from + rng.Intn(len(r.Items)-from+1)
		if got, want := hashItems(r, from, to), hashItemsRule(r, from, to); got != want {
			t.Fatalf("hashItems(%d, %d) = %s, the rule %s", from, to, got, want)
		}
	}
}

// originalsRule is the originals as first written: each item's raw JSON
// appended after a comma.
func originalsRule(r *view.Request, from, to int) []byte {
	dst := []byte{'['}
	for i := from; i < to; i++ {
		if len(dst) > 1 {
			dst = append(dst, ',')
		}
		dst = append(dst, r.Raw(i)...)
	}
	return append(dst, ']')
}

// TestOriginalsFollowTheirRule: the originals of random ranges of random
// items (joined by single commas, or by white space too) are the rule's.
func TestOriginalsFollowTheirRule(t *testing.T) {
	rng := rand.New(rand.NewSource(37))
	for i := 0; i < 300; i++ {
		r := randomItems(rng, 1+rng.Intn(60))
		c := &conversation{req: r}
		from := rng.Intn(len(r.Items))
		to := from + rng.Intn(len(r.Items)-from+1)
		if got, want := c.originals(from, to), originalsRule(r, from, to); string(got) != string(want) {
			t.Fatalf("originals(%d, %d) = %q, the rule %q", from, to, got, want)
		}
	}
}

// TestRangeHashesAreHashItems: remembered across requests — ranges asked
// again, the same sizes with other bytes, an item changed in place — a
// chunk's hash is always hashItems'.
func TestRangeHashesAreHashItems(t *testing.T) {
	rng := rand.New(rand.NewSource(41))
	var h rangeHashes
	hashed := func(r *view.Request) *conversation {
		for i := range r.Items {
			r.Items[i].Hash = tokenizer.ItemHash(r.Raw(i))
		}
		return &conversation{req: r}
	}
	check := func(c *conversation, from, to int) {
		t.Helper()
		if got, want := h.of(c.req, from, to), hashItems(c.req, from, to); got != want {
			t.Fatalf("rangeHashes.of(%d, %d) = %s, hashItems %s", from, to, got, want)
		}
	}
	for i := 0; i < 300; i++ {
		c := hashed(randomItems(rng, 1+rng.Intn(40)))
		from := rng.Intn(len(c.req.Items))
		to := from + rng.Intn(len(c.req.Items)-from+1)
		check(c, from, to)
		check(c, from, to) // remembered
		// The same sizes, other bytes: a letter of an item changed.
		for k := from; k < to; k++ {
			if it := c.req.Items[k]; it.Start < it.End {
				c.req.Body[it.Start] = 'A' + (c.req.Body[it.Start]-'a'+1)%26
				hashed(c.req)
				check(c, from, to)
				break
			}
		}
	}
}
