package agents_test

import (
	"testing"

	"github.com/condense-proxy/condense-proxy/internal/agents"
)

// geminiWindow leaves room for Gemini CLI's own prompt and tools plus a
// few file reads; 20 reads of ~11k tokens overflow it several times.
const geminiWindow = 60_000

// geminiPrompt is the task Gemini CLI is given.
const geminiPrompt = "Read the files of this directory one by one as the tools direct, then report."

// geminiRun runs Gemini CLI through e's proxy.
func geminiRun(t *testing.T, e *e2e, bin string) agents.Result {
	return e.run(func() agents.Result {
		return agents.Run(agentContext(t), agents.GeminiCommand(agents.GeminiOptions{
			Bin: bin, BaseURL: e.stack.Proxy.URL, Home: e.home(), Workdir: e.workdir(), Prompt: geminiPrompt,
		}))
	})
}

// TestGeminiCLI runs the real Gemini CLI through the proxy against the
// strict Gemini fake, which has it read_file a large file per step for 20
// steps (a streamed functionCall each, answered by a functionResponse),
// then finish with a streamed text answer.
func TestGeminiCLI(t *testing.T) {
	bin := agents.Require(t, agents.Gemini)
	if v, err := agents.Version(bin); err == nil {
		t.Logf("%s: %s (pinned %s)", bin, v, agents.GeminiCLIVersion)
	}
	e := newE2E(t, "gemini", geminiWindow)
	e.check(geminiRun(t, e, bin))
}
