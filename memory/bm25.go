package memory

import (
	"math"
	"regexp"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"
)

// BM25 over one conversation's memory, in process. Steps and summaries
// of every level are documents of one index, so their scores are
// comparable: the same terms, the same inverse document frequencies, the
// same length normalization.

// BM25's parameters (the usual ones).
const (
	bm25K1 = 1.2
	bm25B  = 0.75
)

// maxTermLen bounds a term (longer runs are cut: base64, hashes).
const maxTermLen = 64

// stopwords are too common in agents' conversations to tell anything.
var stopwords = map[string]bool{
	"a": true, "an": true, "and": true, "are": true, "as": true, "at": true, "be": true, "by": true, "for": true,
	"from": true, "has": true, "have": true, "in": true, "is": true, "it": true, "its": true, "of": true, "on": true,
	"or": true, "that": true, "the": true, "this": true, "to": true, "was": true, "were": true, "with": true,
	"what": true, "which": true, "did": true, "do": true, "does": true, "we": true, "i": true, "you": true,
	"tool": true, "result": true, "call": true,
}

// terms splits text into search terms: lower-case runs of letters,
// digits and underscores, and, for identifiers, their parts as well
// (snake_case and CamelCase pieces), so "TestParseDuration_Case17" is
// found by "case17" and by "ParseDuration".
func terms(text string) []string {
	var out []string
	emit := func(t string) {
		if len(t) > maxTermLen {
			t = t[:maxTermLen]
		}
		if t == "" || stopwords[t] {
			return
		}
		out = append(out, t)
	}
	word := func(w string) {
		lw := strings.ToLower(w)
		emit(lw)
		parts := splitIdent(w)
		if len(parts) > 1 {
			for _, p := range parts {
				if pl := strings.ToLower(p); pl != lw {
					emit(pl)
				}
			}
		}
	}
	forWords(text, word)
	return out
}

// indexTerms are the terms a document is indexed by and a query searched
// with: its words (terms), each pair of consecutive words, and each path
// it names as its suffixes. A pair ("stored self", "gpu convolution") is
// rarer than either word, so a document holding a phrase outranks one
// holding its words apart; a path's suffixes ("query.py",
// "models/query.py", … the whole path) are rarer than its components, so
// the document naming the very path outranks those sharing its
// directories, and a file's name or its tail finds the whole path.
func indexTerms(text string) []string {
	out := terms(text)
	prev := ""
	forWords(text, func(w string) {
		lw := strings.ToLower(w)
		if len(lw) > maxTermLen {
			lw = lw[:maxTermLen]
		}
		if stopwords[lw] {
			return
		}
		if prev != "" {
			out = append(out, prev+" "+lw)
		}
		prev = lw
	})
	for _, p := range pathName.FindAllString(text, -1) {
		out = append(out, pathSuffixes(p)...)
	}
	return out
}

// forWords calls f with each run of letters, digits and underscores of
// text, in order.
func forWords(text string, f func(string)) {
	start := -1
	for i, r := range text {
		in := unicode.IsLetter(r) || unicode.IsDigit(r) || r == '_'
		switch {
		case in && start < 0:
			start = i
		case !in && start >= 0:
			f(text[start:i])
			start = -1
		}
	}
	if start >= 0 {
		f(text[start:])
	}
}

// pathName matches what may be a path or a file's name: a run of word
// characters, dots, dashes and slashes (pathSuffixes keeps those with a
// slash or an extension).
var pathName = regexp.MustCompile(`[\w.\-/]*[\w/]`)

// Bounds of a path's suffix terms.
const (
	maxPathSuffixes = 8
	maxPathTermLen  = 256
)

// pathSuffixes returns the suffix terms of a path ("/a/b/c.go" → "c.go",
// "b/c.go", "a/b/c.go", "/a/b/c.go"), lower-case, the shortest first, at
// most maxPathSuffixes: those holding a slash, or a dot (a file's name).
// "." and ".." components are not part of a suffix ("./x/y" is "x/y").
func pathSuffixes(p string) []string {
	if len(p) > maxPathTermLen || !strings.ContainsAny(p, "/.") {
		return nil
	}
	p = strings.ToLower(p)
	if len(p) > 1 {
		p = strings.TrimRight(p, "/")
	}
	var out []string
	for end, n := len(p), 0; n < maxPathSuffixes; n++ {
		i := strings.LastIndexByte(p[:end], '/')
		suffix := p[i+1:]
		comp := p[i+1 : end]
		if comp == "." || comp == ".." {
			break
		}
		if comp != "" && (strings.Contains(suffix, "/") || strings.Contains(comp, ".")) && hasWordChar(comp) {
			out = append(out, suffix)
		}
		if i < 0 {
			break
		}
		if i == 0 {
			if len(p) > 1 {
				out = append(out, p) // the absolute path itself
			}
			break
		}
		end = i
	}
	return out
}

func hasWordChar(s string) bool {
	for _, r := range s {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			return true
		}
	}
	return false
}

// splitIdent splits an identifier at underscores and at lower-to-upper
// case changes ("parseHTTPRequest" → parse, HTTPRequest; "a_b" → a, b).
func splitIdent(w string) []string {
	var parts []string
	for _, p := range strings.Split(w, "_") {
		start := 0
		rs := []rune(p)
		for i := 1; i < len(rs); i++ {
			if unicode.IsUpper(rs[i]) && (unicode.IsLower(rs[i-1]) || unicode.IsDigit(rs[i-1])) {
				parts = append(parts, string(rs[start:i]))
				start = i
			}
		}
		if start < len(rs) {
			parts = append(parts, string(rs[start:]))
		}
	}
	return parts
}

// index is a BM25 index over documents, each indexed as its passages
// (passages): a document scores as its best passage, so what a long
// document says in one place (the assistant's words before the file a
// tool call wrote, an error amid pages of output) is not diluted by the
// rest of it. Built once per version of a conversation's memory;
// read-only afterwards (safe for concurrent searches).
type index struct {
	docs   int
	psgs   []docTerms // every document's passages, in document order
	df     map[string]int
	avgLen float64
}

type docTerms struct {
	doc int // the document the passage is of
	tf  map[string]int
	len int
}

// Passages: a document is cut into passages of about passageBytes, at
// white space, each beginning passageOverlap bytes before the previous
// one ends (a phrase across a cut is whole in one of them).
const (
	passageBytes   = 2048
	passageOverlap = 256
)

// passages cuts text into passages (passageBytes, passageOverlap), at
// white space where there is some.
func passages(text string) []string {
	if len(text) <= passageBytes {
		return []string{text}
	}
	var out []string
	for start := 0; ; {
		end := start + passageBytes
		if end >= len(text) {
			out = append(out, text[start:])
			return out
		}
		if i := strings.LastIndexAny(text[start+passageBytes/2:end], " \t\n"); i >= 0 {
			end = start + passageBytes/2 + i
		}
		for end < len(text) && !utf8.RuneStart(text[end]) {
			end++
		}
		out = append(out, text[start:end])
		next := end - passageOverlap
		if i := strings.IndexAny(text[next:end], " \t\n"); i >= 0 {
			next += i + 1
		}
		for next < end && !utf8.RuneStart(text[next]) {
			next++
		}
		start = next
	}
}

func newIndex(texts []string) *index {
	ix := &index{docs: len(texts), df: map[string]int{}}
	total := 0
	for i, t := range texts {
		for _, p := range passages(t) {
			ts := indexTerms(p)
			tf := make(map[string]int, len(ts)/2+1)
			for _, term := range ts {
				tf[term]++
			}
			for term := range tf {
				ix.df[term]++
			}
			ix.psgs = append(ix.psgs, docTerms{doc: i, tf: tf, len: len(ts)})
			total += len(ts)
		}
	}
	if len(ix.psgs) > 0 {
		ix.avgLen = float64(total) / float64(len(ix.psgs))
	}
	return ix
}

// scored is a document's index and its score.
type scored struct {
	doc   int
	score float64
}

// search returns the documents matching query terms, best first, at most
// k (ties: the newer document first, as later steps tend to hold the
// current state of a fact).
func (ix *index) search(query []string, k int) []scored {
	if len(ix.psgs) == 0 || len(query) == 0 {
		return nil
	}
	seen := map[string]bool{}
	var qs []string
	for _, q := range query {
		if !seen[q] {
			seen[q] = true
			qs = append(qs, q)
		}
	}
	n := float64(len(ix.psgs))
	best := make([]float64, ix.docs)
	for _, d := range ix.psgs {
		s := 0.0
		for _, q := range qs {
			f := float64(d.tf[q])
			if f == 0 {
				continue
			}
			df := float64(ix.df[q])
			idf := math.Log(1 + (n-df+0.5)/(df+0.5))
			norm := 1 - bm25B + bm25B*float64(d.len)/max(ix.avgLen, 1)
			s += idf * f * (bm25K1 + 1) / (f + bm25K1*norm)
		}
		best[d.doc] = max(best[d.doc], s)
	}
	var out []scored
	for i, s := range best {
		if s > 0 {
			out = append(out, scored{i, s})
		}
	}
	sort.SliceStable(out, func(a, b int) bool {
		if out[a].score != out[b].score {
			return out[a].score > out[b].score
		}
		return out[a].doc > out[b].doc
	})
	if len(out) > k {
		out = out[:k]
	}
	return out
}
