package memory

import (
	"context"
	"strings"
	"testing"

	"github.com/condense-proxy/condense-proxy/cache"
	"github.com/condense-proxy/condense-proxy/condense"
)

// TestKeyLines: a step's key lines are what it established — a failing
// test and its message, an error, an edit, what the assistant decided —
// not the passing tests, stock phrases or code around them.
func TestKeyLines(t *testing.T) {
	lines := strings.Split(`[assistant]
Run the tests.
[tool call] bash({"command":"go test ./..."})
[tool result]
=== RUN   TestOther1
--- PASS: TestOther1 (0.00s)
--- FAIL: TestParseDuration_Case7 (0.01s)
    duration_test.go:40: got -58s, want 49s
panic: runtime error: index out of range
func Parse(in string) (string, error) {
[assistant]
I will change pkg/http/file7.go because the sign is dropped before the unit is parsed.
[tool call] edit_file({"path":"pkg/http/file7.go"})
The file pkg/http/file7.go has been edited.`, "\n")
	var got []string
	for _, i := range keyLines(lines) {
		got = append(got, lines[i])
	}
	want := []string{
		"--- FAIL: TestParseDuration_Case7 (0.01s)",
		"    duration_test.go:40: got -58s, want 49s",
		"panic: runtime error: index out of range",
		"I will change pkg/http/file7.go because the sign is dropped before the unit is parsed.",
		`[tool call] edit_file({"path":"pkg/http/file7.go"})`,
		"The file pkg/http/file7.go has been edited.",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("key lines:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestRelevantBlockCutsStepsWithoutKeyLines: a step that established
// nothing (no key line) and is larger than its share of the block is cut
// to the lines that match the focus, like a recall answer; a step with
// key lines is cut to them.
func TestRelevantBlockCutsStepsWithoutKeyLines(t *testing.T) {
	ctx := context.Background()
	m := New(cache.NewMemory(64<<20), Options{})
	long := strings.Repeat("filler words about nothing in particular\n", 400) + "the handler reads the quota setting from config.yaml\n"
	m.Add(ctx, "s", "c", []condense.MemoryItem{
		step("aaaa1111", "[tool result]\n--- FAIL: TestQuota (0.01s)\n    quota_test.go:88: limit 42 exceeded\n"+strings.Repeat("=== RUN TestOther\n", 300), 4, "win9"),
		step("bbbb2222", "[tool result]\n"+long, 6, "win9"),
	})
	block := m.Relevant(ctx, "s", "c", "quota handler config.yaml", 10, 2000, nil)
	for _, want := range []string{"limit 42 exceeded", "reads the quota setting from config.yaml"} {
		if !strings.Contains(block, want) {
			t.Errorf("block lacks %q:\n%s", want, block)
		}
	}
	if strings.Contains(block, "=== RUN") {
		t.Errorf("a step with key lines kept others:\n%s", block)
	}
}
