// Package goldenview renders forwarded request bodies as golden-file
// lines a reviewer can read, for tests that pin what the engine forwards.
//
// A line shows a forwarded body's shape next to a short hash of all its
// bytes: the items kept byte for byte from the request as received, as
// runs of letters after their index in that request, and every other
// item — a digest, a summary, a marker, an item shrunk or patched — with
// the content ids of its new texts and its token count. The texts
// themselves are listed once each, by id, after the lines (Book.Bytes),
// cut to a bounded size: when a change alters what is forwarded, the
// golden file's diff shows which requests changed, how their shape
// changed, and the old and new wording of every stand-in.
//
// docs/testing.md ("Goldens") describes the format.
package goldenview

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/condense-proxy/condense-proxy/tokenizer"
	"github.com/condense-proxy/condense-proxy/view"
)

// Bounds of a text as listed: its first MaxLines lines, each cut to
// MaxLineRunes characters.
const (
	MaxLines     = 8
	MaxLineRunes = 120
)

// sumLen and idLen are how many hex digits a body's hash and a text's
// content id keep.
const (
	sumLen = 12
	idLen  = 6
)

// Book collects the lines of a golden file and the texts they name. It
// is safe for concurrent use.
type Book struct {
	mu    sync.Mutex
	lines []string
	texts map[string]string // content id → text as listed
}

// NewBook returns an empty book.
func NewBook() *Book { return &Book{texts: map[string]string{}} }

// Sum returns the short hash of body that a line shows: any change of a
// byte changes it.
func Sum(body []byte) string {
	h := sha256.Sum256(body)
	return hex.EncodeToString(h[:])[:sumLen]
}

// Render returns "hash | shape" of out, what was forwarded for the
// request in, both read with c; the new texts it names are added to the
// book.
func (b *Book) Render(c view.Codec, in, out []byte) string {
	sum := Sum(out)
	if bytes.Equal(in, out) {
		return sum + " | = as received"
	}
	shape, texts := shapeOf(c, in, out)
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, t := range texts {
		b.note(t.id, t.text)
	}
	return sum + " | " + shape
}

// Add appends line (a request's key, ": ", then what it shows) to the
// book's lines.
func (b *Book) Add(line string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.lines = append(b.lines, line)
}

// Keep adds lines taken from an older golden file g, and the texts they
// name there (the cases a run could not replay stay pinned as they were).
func (b *Book) Keep(g *Golden, lines []string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.lines = append(b.lines, lines...)
	for _, l := range lines {
		for _, id := range idsIn(l) {
			if t, ok := g.Texts[id]; ok {
				b.note(id, t)
			}
		}
	}
}

// Lines returns the book's lines, in the order they were added.
func (b *Book) Lines() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.lines...)
}

// note records text under id.
func (b *Book) note(id, text string) { b.texts[id] = text }

// textsHeader opens the texts section of a golden file.
const textsHeader = "## texts"

// Bytes returns the golden file: header (comment lines, each starting
// with "# "), the lines, then the texts the lines name, in the order the
// lines first name them, each as "#id" and its lines indented by two
// spaces.
func (b *Book) Bytes(header string) []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	var w bytes.Buffer
	for _, l := range strings.Split(strings.TrimRight(header, "\n"), "\n") {
		w.WriteString(strings.TrimRight("# "+l, " ") + "\n")
	}
	var order []string
	named := map[string]bool{}
	for _, l := range b.lines {
		w.WriteString(l + "\n")
		for _, id := range idsIn(l) {
			if !named[id] {
				named[id] = true
				order = append(order, id)
			}
		}
	}
	w.WriteString("\n" + textsHeader + "\n")
	for _, id := range order {
		w.WriteString("\n#" + id + "\n")
		for _, l := range strings.Split(b.texts[id], "\n") {
			w.WriteString(strings.TrimRight("  "+l, " ") + "\n")
		}
	}
	return w.Bytes()
}

// idsIn returns the content ids a line names ("#" and idLen hex digits).
func idsIn(line string) []string {
	var ids []string
	for i := 0; i+idLen < len(line); i++ {
		if line[i] != '#' || (i > 0 && line[i-1] != '[' && line[i-1] != ' ' && line[i-1] != '~') {
			continue
		}
		id := line[i+1 : i+1+idLen]
		if isHex(id) && (i+1+idLen == len(line) || !isHexByte(line[i+1+idLen])) {
			ids = append(ids, id)
		}
	}
	return ids
}

func isHex(s string) bool {
	for i := range len(s) {
		if !isHexByte(s[i]) {
			return false
		}
	}
	return true
}

func isHexByte(c byte) bool { return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' }

// text is a new text a line names.
type text struct{ id, text string }

// newText returns s's content id and s as listed.
func newText(s string) text {
	h := sha256.Sum256([]byte(s))
	return text{id: hex.EncodeToString(h[:])[:idLen], text: Cut(s)}
}

// Cut returns s as a golden file lists it: its first MaxLines lines, each
// cut to MaxLineRunes characters ("…" marks a cut), then how many lines
// were left out.
func Cut(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	lines := strings.Split(s, "\n")
	more := 0
	if len(lines) > MaxLines {
		lines, more = lines[:MaxLines], len(lines)-MaxLines
	}
	for i, l := range lines {
		l = strings.ReplaceAll(l, "\r", `\r`)
		if utf8.RuneCountInString(l) > MaxLineRunes {
			l = string([]rune(l)[:MaxLineRunes-1]) + "…"
		}
		lines[i] = l
	}
	if more > 0 {
		lines = append(lines, fmt.Sprintf("… %d more lines", more))
	}
	return strings.Join(lines, "\n")
}

// encoding is what bodies are counted with: the tests' models all count
// with it, so the counts come from the codecs' count cache.
func encoding(string) string { return tokenizer.O200kBase }
