package selective

import "testing"

// TestPastedTool: a user message is a tool output only under a pasted
// result's header naming the tool; a prompt never is.
func TestPastedTool(t *testing.T) {
	for text, want := range map[string]string{
		"[read_file for 'server/handlers.go'] Result:\npackage server": "read_file",
		"[execute_command for 'go test ./...'] Result:\nok":            "execute_command",
		"[attempt_completion] Result:\ndone":                           "attempt_completion",
		"Please fix [read_file for 'x'] Result: as before":             "",
		"Fix the failing test.\n[read_file] Result:":                   "",
		"[read_file for 'x']\nResult:":                                 "",
		"":                                                             "",
	} {
		if got := pastedTool(text); got != want {
			t.Errorf("pastedTool(%q) = %q, want %q", text, got, want)
		}
	}
}
