package memory

import (
	"strings"
	"testing"
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
