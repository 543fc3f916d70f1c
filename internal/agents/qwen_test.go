package agents_test

import (
	"testing"

	"github.com/condense-proxy/condense-proxy/internal/agents"
)

// qwenWindow leaves room for qwen-code's own ~17k-token prompt and tools
// plus a few file reads: 20 reads of ~8k tokens (read_file keeps about
// 25,000 characters of a file) overflow it three times over.
const qwenWindow = 60_000

// qwenPrompt is the task qwen-code is given.
const qwenPrompt = "Read the files of this directory one by one as the tools direct, then report."

// qwenRun runs qwen-code through e's proxy.
func qwenRun(t *testing.T, e *e2e, bin string) agents.Result {
	return e.run(func() agents.Result {
		return agents.Run(agentContext(t), agents.QwenCommand(agents.QwenOptions{
			Bin: bin, BaseURL: e.stack.Proxy.URL + "/v1", Home: e.home(), Workdir: e.workdir(), Prompt: qwenPrompt,
		}))
	})
}

// TestQwenCode runs the real qwen-code CLI through the proxy against the
// strict chat-completions fake, which has it read_file a large file per
// step for 20 steps (a streamed tool call each, its result sent back as a
// tool message), then finish with a streamed text answer.
func TestQwenCode(t *testing.T) {
	bin := agents.Require(t, agents.Qwen)
	if v, err := agents.Version(bin); err == nil {
		t.Logf("%s: %s (pinned %s)", bin, v, agents.QwenCodeVersion)
	}
	e := newE2E(t, "chat/completions", qwenWindow)
	e.check(qwenRun(t, e, bin))
}
