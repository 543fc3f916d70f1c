package agents_test

import (
	"testing"

	"github.com/tidwall/gjson"

	"github.com/condense-proxy/condense-proxy/internal/agents"
	"github.com/condense-proxy/condense-proxy/internal/fakeupstream"
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

// TestCodexOwnModel runs Codex without -m: its own default (gpt-6.1-sol
// in 0.169) sends no tools field and declares its tools in an
// additional_tools input item, where exec_command is reached through a
// JavaScript exec custom tool. The script has it cat each file with exec;
// the proxy must condense (not forward unchanged), keeping the item as
// sent, every request accepted by the strict fake.
func TestCodexOwnModel(t *testing.T) {
	bin := agents.Require(t, agents.Codex)
	e := newE2E(t, "responses", codexWindow, withStep(func(f agents.File) fakeupstream.Step {
		return fakeupstream.Step{Name: "exec", Custom: true,
			Input: "const r = await tools.exec_command({cmd: " + inputJSON("cat "+f.Path) + "});\ntext(r);"}
	}))
	e.check(codexRunModel(t, e, bin, ""))
	first := ""
	for _, r := range e.received() {
		if r.Path != "/v1/responses" || fakeupstream.IsSummaryRequest(r.Body) {
			continue
		}
		n := 0
		gjson.GetBytes(r.Body, "input").ForEach(func(_, it gjson.Result) bool {
			if it.Get("type").Str == "additional_tools" {
				n++
				if first == "" {
					first = it.Raw
				} else if it.Raw != first {
					t.Errorf("additional_tools item changed on its way upstream")
				}
			}
			return true
		})
		if n != 1 {
			t.Errorf("upstream received %d additional_tools items in a request, want 1", n)
		}
	}
	if first == "" {
		t.Errorf("no additional_tools item upstream: is %s's default model still one that sends it?", bin)
	}
}

// codexRun runs Codex through e's proxy.
func codexRun(t *testing.T, e *e2e, bin string) agents.Result {
	return codexRunModel(t, e, bin, "gpt-5.5")
}

// codexRunModel runs Codex with model through e's proxy ("": the agent's
// own default model, no -m).
func codexRunModel(t *testing.T, e *e2e, bin, model string) agents.Result {
	return e.run(func() agents.Result {
		return agents.Run(agentContext(t), agents.CodexCommand(agents.CodexOptions{
			Bin: bin, BaseURL: e.stack.Proxy.URL + "/v1", Home: e.home(), Workdir: e.workdir(), Model: model, OwnModel: model == "",
			Prompt: "Print the files of this directory one by one as the tools direct, then report.",
		}))
	})
}
