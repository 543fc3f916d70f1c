package goldenview

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Golden is a golden file as read: its request lines and its texts.
type Golden struct {
	// Lines are the request lines, in order (not the header's comments).
	Lines []string
	// Texts are the texts listed, by content id, as listed (their
	// indentation taken off).
	Texts map[string]string
}

// Read reads the golden file at path.
func Read(path string) (*Golden, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read golden file: %w", err)
	}
	return Parse(b), nil
}

// Parse reads a golden file Book.Bytes wrote.
func Parse(b []byte) *Golden {
	g := &Golden{Texts: map[string]string{}}
	lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	i := 0
	for ; i < len(lines) && lines[i] != textsHeader; i++ {
		if lines[i] != "" && !strings.HasPrefix(lines[i], "# ") && lines[i] != "#" {
			g.Lines = append(g.Lines, lines[i])
		}
	}
	id, body := "", []string(nil)
	flush := func(last bool) {
		if id == "" {
			return
		}
		if !last && len(body) > 0 {
			body = body[:len(body)-1] // the blank line before the next text
		}
		g.Texts[id] = strings.Join(body, "\n")
	}
	for _, l := range lines[min(i+1, len(lines)):] {
		if len(l) == 1+idLen && l[0] == '#' && isHex(l[1:]) {
			flush(false)
			id, body = l[1:], nil
			continue
		}
		body = append(body, strings.TrimPrefix(l, "  "))
	}
	flush(true)
	return g
}

// Key returns the request a line is about: what comes before its first
// ": ".
func Key(line string) string {
	k, _, _ := strings.Cut(line, ": ")
	return k
}

// Select returns the lines whose key starts with prefix.
func (g *Golden) Select(prefix string) []string {
	var out []string
	for _, l := range g.Lines {
		if strings.HasPrefix(Key(l), prefix) {
			out = append(out, l)
		}
	}
	return out
}

// DiffLines returns how the request lines got differ from want: how many
// requests differ, and the first of them with both its lines; "" when
// they are the same.
func DiffLines(got, want []string) string {
	wantOf := map[string]string{}
	for _, l := range want {
		wantOf[Key(l)] = l
	}
	gotKeys := map[string]bool{}
	n, first := 0, ""
	for _, l := range got {
		k := Key(l)
		gotKeys[k] = true
		w, ok := wantOf[k]
		if ok && w == l {
			continue
		}
		if n++; first == "" && ok {
			first = fmt.Sprintf("%s forwarded differently:\n got  %s\n want %s", k, l, w)
		} else if first == "" {
			first = fmt.Sprintf("%s is not in the golden file:\n got  %s", k, l)
		}
	}
	for _, l := range want {
		if !gotKeys[Key(l)] {
			if n++; first == "" {
				first = fmt.Sprintf("%s was not sent:\n want %s", Key(l), l)
			}
		}
	}
	if n == 0 {
		return ""
	}
	return fmt.Sprintf("%d of %d requests differ from the golden file; the first: %s", n, max(len(got), len(want)), first)
}

// Check compares got, a golden file Book.Bytes wrote, with the file at
// path, or writes it there when update is set. A difference fails t,
// naming the first request that differs (or, the requests all the same,
// the first line), and how to rewrite the file (rewrite: the command).
func Check(t testing.TB, path string, got []byte, update bool, rewrite string) {
	t.Helper()
	if update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (%s writes it)", err, rewrite)
	}
	if bytes.Equal(got, want) {
		return
	}
	if d := DiffLines(Parse(got).Lines, Parse(want).Lines); d != "" {
		t.Fatalf("%s: %s\n(an intended change: %s, and say in the commit why)", path, d, rewrite)
	}
	g, w := strings.Split(string(got), "\n"), strings.Split(string(want), "\n")
	for i := range min(len(g), len(w)) {
		if g[i] != w[i] {
			t.Fatalf("%s: line %d differs (the requests are the same):\n got  %s\n want %s\n(%s rewrites it)", path, i+1, g[i], w[i], rewrite)
		}
	}
	t.Fatalf("%s: %d lines, want %d (%s rewrites it)", path, len(g), len(w), rewrite)
}
