package goldenview

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/condense-proxy/condense-proxy/view"
)

// shapeOf renders out, forwarded for the request in, as the sequence of
// its items (see the package comment), and returns the new texts it
// names. A body its codec cannot scan is shown by its size.
func shapeOf(c view.Codec, in, out []byte) (string, []text) {
	fwd, err := c.Scan(out, encoding)
	if err != nil {
		return fmt.Sprintf("unscanned %d bytes (%v)", len(out), err), nil
	}
	recv, err := c.Scan(in, encoding)
	if err != nil {
		return fmt.Sprintf("%d items; the request as received unscanned (%v)", len(fwd.Items), err), nil
	}
	// Roles, calls and results: a body the codec refuses to parse is
	// shown by its items' bytes alone ("?" letters).
	_ = c.Parse(fwd)
	_ = c.Parse(recv)
	s := &shaper{c: c, recv: recv, fwd: fwd, at: map[string][]int{}}
	for i := range recv.Items {
		raw := recv.Raw(i)
		s.at[raw] = append(s.at[raw], i)
	}
	if f := s.frame(); f != "" {
		s.tokens = append(s.tokens, f)
	}
	prev := -2 // the received index of the item kept before; -2: none
	for j := range fwd.Items {
		k := s.kept(j, prev)
		switch {
		case k >= 0 && k == prev+1 && prev >= 0:
			s.tokens[len(s.tokens)-1] += letter(&fwd.Items[j])
		case k >= 0:
			s.tokens = append(s.tokens, fmt.Sprintf("%d:%s", k, letter(&fwd.Items[j])))
		default:
			s.tokens = append(s.tokens, s.changed(j))
		}
		prev = k
	}
	return strings.Join(s.tokens, " "), s.texts
}

// shaper renders one forwarded body.
type shaper struct {
	c         view.Codec
	recv, fwd *view.Request
	at        map[string][]int // a received item's bytes → its indexes
	parts     map[string]bool  // the received items' texts (see parts)
	tokens    []string
	texts     []text
}

// kept returns the index in the request as received of an item whose
// bytes forwarded item j has (the first after prev, if any), or -1.
func (s *shaper) kept(j, prev int) int {
	ks := s.at[s.fwd.Raw(j)]
	if len(ks) == 0 {
		return -1
	}
	for _, k := range ks {
		if k > prev {
			return k
		}
	}
	return ks[0]
}

// letter names an item's kind: S system, D developer, U user, A
// assistant, T an item carrying tool results, ? unknown; lower case when
// the item is frozen (thinking, reasoning).
func letter(it *view.Item) string {
	l := "?"
	switch {
	case len(it.Answers) > 0 || it.Role == view.RoleTool:
		l = "T"
	case it.Role == view.RoleSystem:
		l = "S"
	case it.Role == view.RoleDeveloper:
		l = "D"
	case it.Role == view.RoleUser:
		l = "U"
	case it.Role == view.RoleAssistant:
		l = "A"
	}
	if it.Frozen {
		l = strings.ToLower(l)
	}
	return l
}

// changed renders forwarded item j, which is no item of the request as
// received: its letter, its calls' names, the ids of its texts the
// request as received has nowhere, and its count —
// "T[#3fa2c1 120t]", "A>bash[#9c1e0f 40t]". When all its texts are
// received ones (bytes moved, a marker or a block taken out), the id is
// that of what its bytes change against the received item closest to
// them: "a[~#07d2e4 310t]".
func (s *shaper) changed(j int) string {
	it := &s.fwd.Items[j]
	var b strings.Builder
	b.WriteString(letter(it))
	for i, c := range it.Calls {
		b.WriteString(map[bool]string{true: ">", false: ","}[i == 0] + c.Name)
	}
	b.WriteString("[")
	ids := s.newParts(j)
	if len(ids) == 0 {
		t := newText(s.byteChange(j))
		s.texts = append(s.texts, t)
		ids = []string{"~#" + t.id}
	}
	b.WriteString(strings.Join(ids, " "))
	fmt.Fprintf(&b, " %dt]", it.Tokens)
	return b.String()
}

// newParts returns "#id" for each text of forwarded item j that no item
// of the request as received has, and adds those texts.
func (s *shaper) newParts(j int) []string {
	if s.parts == nil {
		s.parts = map[string]bool{}
		for i := range s.recv.Items {
			for _, p := range parts(s.c.Text(s.recv, i)) {
				s.parts[p] = true
			}
		}
	}
	var ids []string
	for _, p := range parts(s.c.Text(s.fwd, j)) {
		if s.parts[p] {
			continue
		}
		t := newText(p)
		s.texts = append(s.texts, t)
		ids = append(ids, "#"+t.id)
	}
	return ids
}

// parts returns the texts of an item: its message text, each call (its
// name and arguments) and each tool result's text.
func parts(t view.Text) []string {
	var ps []string
	if t.Text != "" {
		ps = append(ps, t.Text)
	}
	for _, c := range t.Calls {
		ps = append(ps, "call "+c.Name+" "+c.Args)
	}
	for _, r := range t.Results {
		ps = append(ps, r.Text)
	}
	return ps
}

// byteChange returns how forwarded item j's bytes differ from those of
// the received item of its letter that shares the most leading and
// trailing bytes with it.
func (s *shaper) byteChange(j int) string {
	out := s.fwd.Raw(j)
	best, bestN := "", -1
	for i := range s.recv.Items {
		if letter(&s.recv.Items[i]) != letter(&s.fwd.Items[j]) {
			continue
		}
		in := s.recv.Raw(i)
		if n := common(in, out); n > bestN {
			best, bestN = in, n
		}
	}
	if bestN < 0 {
		return "+ " + out
	}
	return diff(best, out)
}

// frame returns "frame[~#id]" when the bytes around the items array
// differ from the request as received (a tool added, a field taken out),
// or "".
func (s *shaper) frame() string {
	const items = "[…items…]"
	r, f := s.recv, s.fwd
	in := r.Span(0, r.Array[0]) + items + r.Span(r.Array[1], len(r.Body))
	out := f.Span(0, f.Array[0]) + items + f.Span(f.Array[1], len(f.Body))
	if in == out {
		return ""
	}
	t := newText(diff(in, out))
	s.texts = append(s.texts, t)
	return "frame[~#" + t.id + "]"
}

// common returns how many leading and trailing bytes a and b share.
func common(a, b string) int {
	p := prefixLen(a, b)
	return p + suffixLen(a[p:], b[p:])
}

// diff returns what differs between a and b once their common leading
// and trailing bytes are taken off: "- " what a has there, "+ " what b
// has (a line each, when not empty).
func diff(a, b string) string {
	p := prefixLen(a, b)
	for p > 0 && (!runeStart(a, p) || !runeStart(b, p)) {
		p--
	}
	n := suffixLen(a[p:], b[p:])
	for n > 0 && (!runeStart(a, len(a)-n) || !runeStart(b, len(b)-n)) {
		n--
	}
	ea, eb := len(a)-n, len(b)-n
	switch {
	case p == ea && p < eb:
		p, eb = slide(b, p, eb)
		ea = p
	case p == eb && p < ea:
		p, ea = slide(a, p, ea)
		eb = p
	}
	var lines []string
	if a[p:ea] != "" {
		lines = append(lines, "- "+a[p:ea])
	}
	if b[p:eb] != "" {
		lines = append(lines, "+ "+b[p:eb])
	}
	return strings.Join(lines, "\n")
}

// slide returns where bytes s[p:e] that one side of a diff has and the
// other has not start and end once moved to start at a JSON delimiter
// (, " { [), when they can be: the same bytes are inserted one place
// earlier while the byte before them is their last ("b":1,"a" after
// {"a" reads "b":1,"a" before it).
func slide(s string, p, e int) (int, int) {
	for q, f := p, e; q < f; q, f = q-1, f-1 {
		if strings.IndexByte(`,"{[`, s[q]) >= 0 {
			return q, f
		}
		if q == 0 || s[q-1] != s[f-1] {
			break
		}
	}
	return p, e
}

// runeStart reports whether s[i:] starts a character (or is empty).
func runeStart(s string, i int) bool { return i >= len(s) || utf8.RuneStart(s[i]) }

func prefixLen(a, b string) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}

func suffixLen(a, b string) int {
	n := 0
	for n < len(a) && n < len(b) && a[len(a)-1-n] == b[len(b)-1-n] {
		n++
	}
	return n
}
