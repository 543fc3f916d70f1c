package memory

import (
	"context"
	"strings"
	"testing"

	"github.com/condense-proxy/condense-proxy/cache"
	"github.com/condense-proxy/condense-proxy/condense"
)

// searchTop returns the ids of the best k results of query over steps.
func searchTop(t *testing.T, query string, k int, steps ...[2]string) []string {
	t.Helper()
	ctx := context.Background()
	m := New(cache.NewMemory(64<<20), Options{})
	for i, s := range steps {
		m.Add(ctx, "s", "c", []condense.MemoryItem{step(s[0], s[1], 2*i)})
	}
	var out []string
	for _, h := range m.Search(ctx, "s", "c", query, k, nil) {
		out = append(out, h.Item.ID)
	}
	return out
}

func contains(ids []string, id string) bool {
	for _, x := range ids {
		if x == id {
			return true
		}
	}
	return false
}

// A path's directories are shared by many steps (listings of them,
// commands run in them, other files of theirs): the step naming the very
// path, whole, comes first; a file's name or tail finds its whole path.
func TestSearchPathFindsTheStepNamingIt(t *testing.T) {
	listing := "[tool call] LS({\"path\":\"/home/u/proj/bench\"})\n[tool result]\n- /home/u/proj/bench/\n  - competitors/\n    - cublas_benchmark.c\n    - cufft_benchmark.c\n  - src/\n  - run_full_benchmark.py\n"
	steps := [][2]string{
		{"read", "[assistant]\nLet me check the competitors directory:\n[tool call] Read({\"file_path\":\"/home/u/proj/bench/competitors/cupy_benchmark.py\"})\n[tool result]\nimport cupy\n" + strings.Repeat("def run(): pass\n", 40)},
		{"ls1", listing},
		{"ls2", listing + "  - competitors/cupy_benchmark.py\n"},
		{"run1", "[tool call] Bash({\"command\":\"python3 bench/competitors/cupy_benchmark.py --operation vector_add\"})\n[tool result]\n{\"error\": \"CuPy not available\"}"},
		{"run2", "[tool call] Bash({\"command\":\"cd /home/u/proj/bench && python3 competitors/cupy_benchmark.py --size 10\"})\n[tool result]\n{\"error\": \"CuPy not available\"}"},
		{"other", "[tool call] Read({\"file_path\":\"/home/u/proj/bench/competitors/cufft_benchmark.c\"})\n[tool result]\n#include <cufft.h>\n"},
	}
	if got := searchTop(t, "/home/u/proj/bench/competitors/cupy_benchmark.py", 1, steps...); len(got) == 0 || got[0] != "read" {
		t.Errorf("the whole path: best %v, want the step that read it", got)
	}
	got := searchTop(t, "cufft_benchmark.c", 3, [2]string{"x", "[tool call] Read({\"file_path\":\"/srv/app/django/db/models/query.py\"})\n[tool result]\nclass QuerySet:"}, steps[5], steps[0])
	if len(got) == 0 || got[0] != "other" {
		t.Errorf("a file's name: best %v, want the step naming its path", got)
	}
	got = searchTop(t, "models/query.py", 3, [2]string{"q", "[tool call] Read({\"file_path\":\"/srv/app/django/db/models/query.py\"})\n[tool result]\nclass QuerySet:"},
		[2]string{"m", "[tool call] Read({\"file_path\":\"/srv/app/django/db/models/base.py\"})\n[tool result]\nclass Model: # the query is built in query.py"},
		[2]string{"s", "[tool call] Read({\"file_path\":\"/srv/app/django/db/models/sql/query.py\"})\n[tool result]\nclass Query:"})
	if len(got) == 0 || got[0] != "q" {
		t.Errorf("a path's tail: best %v, want the step naming django/db/models/query.py", got)
	}
}

// A sentence the assistant said is found by its words even when the step
// that holds it goes on for pages (the file its tool call wrote), above
// short steps that share the words apart.
func TestSearchPhraseInALongStep(t *testing.T) {
	file := strings.Repeat("    result = subprocess.run(cmd, capture_output=True)\n    data = json.loads(result.stdout)\n", 150)
	steps := [][2]string{
		{"said", "[assistant]\nNow I'll create the comprehensive single-command benchmark script:\n[tool call] Write({\"file_path\":\"/home/u/run_benchmark.py\",\"content\":\"" + file + "\"})"},
		{"a", "[assistant]\nLet me first create a GPU benchmark to test our implementation against the competitors. I'll create a comprehensive GPU benchmark script:"},
		{"b", "[assistant]\nI'll help you create a streamlined single-command benchmark with automatic report generation. Now let me start."},
		{"c", "[assistant]\nNow let me clean up the folder structure. First, I'll update the todo list for the benchmark script and the command."},
		{"d", "[assistant]\nNow I need to add the benchmark to the comprehensive script; the single command should run it."},
	}
	got := searchTop(t, "Now I'll create the comprehensive single-command benchmark script:", 3, steps...)
	if !contains(got, "said") {
		t.Errorf("top 3 %v lack the step that said the sentence", got)
	}
}

func TestPathSuffixes(t *testing.T) {
	for in, want := range map[string]string{
		"/a/b/c.go":       "c.go b/c.go a/b/c.go /a/b/c.go",
		"./x/y":           "x/y",
		"a/b/":            "a/b",
		"README.md":       "readme.md",
		"self.field_name": "self.field_name",
		"plain":           "",
		"/":               "",
	} {
		if got := strings.Join(pathSuffixes(in), " "); got != want {
			t.Errorf("pathSuffixes(%q) = %q, want %q", in, got, want)
		}
	}
}

// Passages cover the whole text, each within the bound, consecutive ones
// overlapping, cut at white space.
func TestPassages(t *testing.T) {
	text := strings.Repeat("héllo wörld the quick brown fox ", 500)
	ps := passages(text)
	if len(ps) < 2 {
		t.Fatalf("%d passages of %d bytes", len(ps), len(text))
	}
	if !strings.HasPrefix(text, ps[0]) || !strings.HasSuffix(text, ps[len(ps)-1]) {
		t.Error("the passages do not begin and end with the text")
	}
	off := 0
	for i, p := range ps {
		if len(p) > passageBytes {
			t.Errorf("passage %d: %d bytes", i, len(p))
		}
		at := strings.Index(text[off:], p)
		if at < 0 {
			t.Fatalf("passage %d is not a piece of the text after the previous one", i)
		}
		if i > 0 && at >= len(ps[i-1]) {
			t.Errorf("passage %d does not overlap the previous one", i)
		}
		off += at
	}
	if ps := passages("short text"); len(ps) != 1 || ps[0] != "short text" {
		t.Errorf("short text cut: %q", ps)
	}
}
