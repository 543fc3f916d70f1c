package corpus

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/condense-proxy/condense-proxy/internal/fakeupstream"
)

func validate(t *testing.T, s *Session) {
	t.Helper()
	body, err := s.Request("gpt-4o", 0)
	if err != nil {
		t.Fatal(err)
	}
	var req struct {
		Messages []json.RawMessage `json:"messages"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		t.Fatal(err)
	}
	if err := fakeupstream.Validate(req.Messages); err != nil {
		t.Fatalf("converted session is not a valid conversation: %v", err)
	}
	if s.Messages[0].Role != "system" {
		t.Errorf("first message role %q, want system", s.Messages[0].Role)
	}
}

func roles(s *Session) string {
	out := ""
	for _, m := range s.Messages {
		out += m.Role[:1]
	}
	return out
}

func TestConverters(t *testing.T) {
	tests := []struct {
		file      string
		roles     string // first letters of each role, in order
		tools     []string
		firstUser string
	}{
		// The final submit call has no reply: it is cut, and the exit message dropped.
		{"mini.traj.json", "suatatatt", []string{"bash"}, "Fix the bug in parse()"},
		// Function calling: tool_call_ids[0] becomes tool_call_id.
		{"swe.traj", "suatat", []string{"open", "submit"}, "Issue: marshmallow fails"},
		// Legacy: observations are user messages, no tool calls.
		{"legacy.traj", "suauau", nil, "We're solving an issue"},
		// Claude Code: system added, blocks merged by id, sidechain skipped,
		// tool results moved right after their call, the orphan dropped.
		{"claude.jsonl", "suattau", []string{"Read", "Bash"}, "Please fix the build"},
	}
	for _, tc := range tests {
		t.Run(tc.file, func(t *testing.T) {
			s, err := Load(filepath.Join("..", "..", "testdata", "corpus", tc.file))
			if err != nil {
				t.Fatal(err)
			}
			validate(t, s)
			if got := roles(s); got != tc.roles {
				t.Errorf("roles %q, want %q", got, tc.roles)
			}
			if len(s.Tools) != len(tc.tools) {
				t.Errorf("tools %v, want %v", s.Tools, tc.tools)
			}
			for i := range tc.tools {
				if i < len(s.Tools) && s.Tools[i] != tc.tools[i] {
					t.Errorf("tools %v, want %v", s.Tools, tc.tools)
				}
			}
			if got := *s.Messages[1].Content; len(got) < len(tc.firstUser) || got[:len(tc.firstUser)] != tc.firstUser {
				t.Errorf("first user message %q, want prefix %q", got, tc.firstUser)
			}
		})
	}
}

func TestClaudeMergesBlocks(t *testing.T) {
	s, err := Load(filepath.Join("..", "..", "testdata", "corpus", "claude.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	a := s.Messages[2]
	if a.Content == nil || *a.Content != "Let me look.\n\nAnd check the log." || len(a.ToolCalls) != 2 {
		t.Fatalf("merged assistant = %+v", a)
	}
	if a.ToolCalls[0].Function.Arguments != `{"file_path":"/src/main.c"}` {
		t.Errorf("arguments %s", a.ToolCalls[0].Function.Arguments)
	}
	if got := *s.Messages[4].Content; got != "[error] exit 2\nmake: *** [all] Error 1" {
		t.Errorf("error tool result %q", got)
	}
}

func TestBadInput(t *testing.T) {
	dir := t.TempDir()
	cases := map[string]string{
		"broken.traj.json": "{not json",
		"empty.traj":       `{"history":[]}`,
		"bad.jsonl":        "{\"type\":\"user\"}\nnot json\n",
		"notes.txt":        "hello",
	}
	for name, body := range cases {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := Load(p); err == nil {
			t.Errorf("%s: Load succeeded, want error", name)
		}
	}
}

func TestTurnEnds(t *testing.T) {
	s, err := Load(filepath.Join("..", "..", "testdata", "corpus", "mini.traj.json"))
	if err != nil {
		t.Fatal(err)
	}
	ends := s.TurnEnds()
	want := []int{2, 4, 6, 9}
	if len(ends) != len(want) {
		t.Fatalf("turn ends %v, want %v", ends, want)
	}
	for i := range want {
		if ends[i] != want[i] {
			t.Fatalf("turn ends %v, want %v", ends, want)
		}
	}
}

// TestSharedCorpus converts every real session and checks validity.
func TestSharedCorpus(t *testing.T) {
	dir := sharedCorpus(t)
	files, err := Files(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 10 {
		t.Fatalf("found only %d corpus files", len(files))
	}
	for _, f := range files {
		s, err := Load(f)
		if err != nil {
			t.Errorf("%s: %v", f, err)
			continue
		}
		validate(t, s)
		if len(s.Messages) < 10 {
			t.Errorf("%s: only %d messages", f, len(s.Messages))
		}
	}
}
