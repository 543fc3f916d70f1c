package agents_test

import (
	"net/http"
	"testing"

	"github.com/condense-proxy/condense-proxy/config"
	"github.com/condense-proxy/condense-proxy/internal/agents"
)

// TestAgentsInFullMode runs each real agent through the proxy in full mode
// (condense.mode: full; the other agent tests run the default, auto),
// against its strict fake, at its test window: what every agent test
// asserts (nothing rejected, nothing over the window, the script
// finished), and that full mode's folds condensed at least one request —
// not only the sliding window, its last resort — and no digest did.
func TestAgentsInFullMode(t *testing.T) {
	full := withConfig(func(c *config.Config) { c.Condense.Mode = "full" })
	for _, tc := range []struct {
		name, format string
		window       int
		agent        string
		run          func(t *testing.T, e *e2e, bin string) agents.Result
	}{
		{"qwen-code", "chat/completions", qwenWindow, agents.Qwen, qwenRun},
		{"codex", "responses", codexWindow, agents.Codex, codexRun},
		{"gemini-cli", "gemini", geminiWindow, agents.Gemini, geminiRun},
		{"claude-code", "messages", claudeWindow, agents.Claude, func(t *testing.T, e *e2e, bin string) agents.Result {
			return claudeRun(t, e, bin, "claude-sonnet-4-5")
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bin := agents.Require(t, tc.agent)
			e := newE2E(t, tc.format, tc.window, full)
			e.check(tc.run(t, e, bin))
			applied := map[string]int{}
			for _, x := range e.front.Exchanges() {
				if x.Method == http.MethodPost && e.isTurn(x.Path) {
					applied[x.Response.Get("X-Condense-Applied")]++
				}
			}
			t.Logf("applied: %v", applied)
			if applied["full"] == 0 || applied["selective"] > 0 {
				t.Errorf("full mode folded no request, or digested one (applied %v)", applied)
			}
		})
	}
}
