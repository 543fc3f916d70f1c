package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// small is a short replay: one small synthetic session, two modes.
var small = []string{"--window", "8000", "--formats", "chat", "--modes", "off,full-extractive", "--check=false", "synthetic:1:30000"}

// TestReportGoesElsewhereUnlessUpdate: replaying other sessions, as
// README shows it, no longer overwrites the repository's EVALUATION.md
// and eval/results.json: the report goes to a new folder it names; only
// -update (or an explicit -out / -json) writes the tracked files.
func TestReportGoesElsewhereUnlessUpdate(t *testing.T) {
	repo := t.TempDir() // stands for the repository's root
	t.Chdir(repo)
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)

	var stderr bytes.Buffer
	if err := run(context.Background(), small, &stderr); err != nil {
		t.Fatalf("run: %v\n%s", err, stderr.String())
	}
	for _, tracked := range []string{"EVALUATION.md", filepath.Join("eval", "results.json"), "eval"} {
		if _, err := os.Stat(filepath.Join(repo, tracked)); err == nil {
			t.Errorf("%s written in the working folder without -update", tracked)
		}
	}
	dirs, _ := filepath.Glob(filepath.Join(tmp, "condense-eval-*"))
	if len(dirs) != 1 {
		t.Fatalf("output folders %v, want one in the temporary folder", dirs)
	}
	for _, f := range []string{"EVALUATION.md", "results.json"} {
		p := filepath.Join(dirs[0], f)
		if st, err := os.Stat(p); err != nil || st.Size() == 0 {
			t.Errorf("%s: %v", p, err)
		}
		if !strings.Contains(stderr.String(), p) {
			t.Errorf("the output does not name %s:\n%s", p, stderr.String())
		}
	}
	if svgs, _ := filepath.Glob(filepath.Join(dirs[0], "eval", "*.svg")); len(svgs) == 0 {
		t.Error("no chart beside the report")
	}

	// --dir names the folder.
	mine := filepath.Join(t.TempDir(), "out")
	stderr.Reset()
	if err := run(context.Background(), append([]string{"--dir", mine}, small...), &stderr); err != nil {
		t.Fatalf("run --dir: %v", err)
	}
	if _, err := os.Stat(filepath.Join(mine, "results.json")); err != nil {
		t.Errorf("--dir: %v", err)
	}

	// -update regenerates the tracked report.
	stderr.Reset()
	if err := run(context.Background(), append([]string{"-update"}, small...), &stderr); err != nil {
		t.Fatalf("run -update: %v", err)
	}
	for _, tracked := range []string{"EVALUATION.md", filepath.Join("eval", "results.json")} {
		if _, err := os.Stat(filepath.Join(repo, tracked)); err != nil {
			t.Errorf("-update did not write %s: %v", tracked, err)
		}
	}
	if err := run(context.Background(), append([]string{"-update", "--dir", mine}, small...), &stderr); err == nil {
		t.Error("-update with --dir accepted")
	}
}

// TestDefaultSuiteForms: the default suite replays every corpus session in
// chat, Responses and Gemini form, Claude Code's in Messages form too.
func TestDefaultSuiteForms(t *testing.T) {
	got := map[string][]string{}
	for _, s := range defaultSources([]string{"a.jsonl", "b.traj.json"}, 32000, 128000) {
		got[s.Format] = append(got[s.Format], s.Spec)
		if !strings.HasPrefix(s.Spec, "synthetic:") && s.Window != 32000 {
			t.Errorf("%s [%s] at window %d", s.Spec, s.Format, s.Window)
		}
	}
	want := map[string]string{"chat": "a.jsonl b.traj.json", "messages": "a.jsonl", "responses": "a.jsonl b.traj.json", "gemini": "a.jsonl b.traj.json",
		"": "synthetic:1:4000000 synthetic:2:4000000"}
	for format, specs := range want {
		if g := strings.Join(got[format], " "); g != specs {
			t.Errorf("%q: %s, want %s", format, g, specs)
		}
	}
	if len(got) != len(want) {
		t.Errorf("forms %v", got)
	}
}

// TestRedisFlag: --redis takes host:port as redis-cli does, or a redis://
// or rediss:// URL; anything else is an error before any replay (it was a
// panic in the harness).
func TestRedisFlag(t *testing.T) {
	for _, bad := range []string{"http://127.0.0.1:6379", "redis://", "redis:///0"} {
		var stderr bytes.Buffer
		err := run(context.Background(), append([]string{"--replicas", "2", "--redis", bad, "--dir", t.TempDir()}, small...), &stderr)
		if err == nil || !strings.Contains(err.Error(), "--redis") {
			t.Errorf("--redis %q: %v", bad, err)
		}
	}
	var stderr bytes.Buffer
	if err := run(context.Background(), append([]string{"--replicas", "2", "--redis", "127.0.0.1:1", "--dir", t.TempDir()}, small...), &stderr); err != nil && strings.Contains(err.Error(), "--redis") {
		t.Errorf("--redis host:port refused: %v", err)
	}
}
