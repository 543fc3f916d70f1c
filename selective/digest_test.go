package selective

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files")

func TestDigestGolden(t *testing.T) {
	tests := []struct {
		name string
		kind string
		want []string // facts the digest must keep
	}{
		{"file_read", KindFile, []string{"/src/pkg/timeparse/parse.go", "package timeparse", "var ErrEmpty", "func parse0(s string)", "type Duration struct", "referenced later:", "   42"}},
		{"go_test_log", KindLog, []string{"TestParseDuration", "TestParseNegative", "panic: runtime error", "duration_test.go:88: got -5s, want 5s", "exit status 1", "FAIL github.com/x/timeparse"}},
		{"pytest_log", KindLog, []string{"test_timedelta_precision", "1 failed", "56 passed", "exit status 1", "AssertionError: assert 344 == 345"}},
		{"grep_results", KindSearch, []string{"60 matches in 7 files", "src/module0/handler.py", "src/module6/handler.py"}},
		{"find_output", KindSearch, []string{"80 matches in 80 files", "./src/pkg0/sub0/file_0.py"}},
		{"json_api", KindJSON, []string{"count: 40", "items:", "array[40]", `"id": 0,`, `"id": 39,`}},
		{"build_output", KindGeneric, []string{"error: implicit declaration of function 'vsla_free'", "Error 2", "lines condensed"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			raw, err := os.ReadFile(filepath.Join("..", "testdata", "selective", tc.name+".input.json"))
			if err != nil {
				t.Fatal(err)
			}
			var in Input
			if err := json.Unmarshal(raw, &in); err != nil {
				t.Fatal(err)
			}
			got, kind := Digest(in)
			if kind != tc.kind {
				t.Errorf("kind %s, want %s", kind, tc.kind)
			}
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("digest lacks %q:\n%s", w, got)
				}
			}
			if len(got) >= len(in.Content) {
				t.Errorf("digest (%d bytes) not smaller than the original (%d)", len(got), len(in.Content))
			}
			golden := filepath.Join("..", "testdata", "selective", tc.name+".golden")
			if *update {
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run with -update to create)", err)
			}
			if got != string(want) {
				t.Errorf("digest differs from %s (run with -update if intended):\n%s", golden, got)
			}
		})
	}
}

// FuzzDigest: any output, any tool, any arguments — never a panic.
func FuzzDigest(f *testing.F) {
	for _, name := range []string{"file_read", "go_test_log", "pytest_log", "grep_results", "find_output", "json_api", "build_output"} {
		raw, err := os.ReadFile(filepath.Join("..", "testdata", "selective", name+".input.json"))
		if err != nil {
			f.Fatal(err)
		}
		var in Input
		json.Unmarshal(raw, &in)
		f.Add(in.Tool, in.Args, in.Content, in.Later)
	}
	f.Fuzz(func(t *testing.T, tool, args, content, later string) {
		body, kind := Digest(Input{Tool: tool, Args: args, Content: content, Later: later})
		if kind == "" {
			t.Fatal("no kind")
		}
		_ = body
	})
}

// TestFileDigestPathFromCmd: Codex's exec_command names its command "cmd".
func TestFileDigestPathFromCmd(t *testing.T) {
	var content strings.Builder
	for i := 0; i < 80; i++ {
		content.WriteString("\tx := compute(42) // a line of code\n")
	}
	got := fileDigest(Input{Tool: "exec_command", Args: `{"cmd":"cat pkg/timeparse/parse.go","workdir":"/repo"}`, Content: content.String()})
	if !strings.Contains(got, "file pkg/timeparse/parse.go, 80 lines") {
		t.Fatalf("digest %q", got)
	}
}
