package agents_test

import (
	"testing"

	"github.com/condense-proxy/condense-proxy/internal/agents"
)

// codexWindow leaves room for Codex's own ~10k-token prompt and tools
// plus a few outputs: 20 cats of ~11k tokens overflow it five times.
const codexWindow = 40_000

// TestCodex runs the real Codex CLI through the proxy against the strict
// Responses fake, which has it cat a large file per step for 20 steps,
// then finish.
func TestCodex(t *testing.T) {
	bin := agents.Require(t, agents.Codex)
	if v, err := agents.Version(bin); err == nil {
		t.Logf("%s: %s (pinned %s)", bin, v, agents.CodexVersion)
	}
	e := newE2E(t, "responses", codexWindow)
	e.check(codexRun(t, e, bin))
}

// codexRun runs Codex through e's proxy.
func codexRun(t *testing.T, e *e2e, bin string) agents.Result {
	return e.run(func() agents.Result {
		return agents.Run(agentContext(t), agents.CodexCommand(agents.CodexOptions{
			Bin: bin, BaseURL: e.stack.Proxy.URL + "/v1", Home: e.home(), Workdir: e.workdir(),
			Prompt: "Print the files of this directory one by one as the tools direct, then report.",
		}))
	})
}
