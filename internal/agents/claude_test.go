package agents_test

import (
	"net/http"
	"strconv"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/condense-proxy/condense-proxy/config"
	"github.com/condense-proxy/condense-proxy/internal/agents"
	"github.com/condense-proxy/condense-proxy/internal/fakeupstream"
)

// claudeWindow leaves room for Claude Code's own ~26k-token prompt and
// tools plus a few file reads: 20 reads of ~11k tokens overflow it three
// times over.
const claudeWindow = 80_000

// TestClaudeCode runs the real Claude Code CLI through the proxy against
// the strict Messages fake, which has it Read a large file per step for 20
// steps, then finish: once with a model Claude Code gives a thinking budget
// (thinking enabled, budget_tokens), once with one it gives adaptive
// thinking and an effort (output_config).
func TestClaudeCode(t *testing.T) {
	bin := agents.Require(t, agents.Claude)
	if v, err := agents.Version(bin); err == nil {
		t.Logf("%s: %s (pinned %s)", bin, v, agents.ClaudeCodeVersion)
	}
	for _, model := range []string{"claude-sonnet-4-5", "claude-opus-4-7"} {
		t.Run(model, func(t *testing.T) {
			e := newE2E(t, "messages", claudeWindow)
			e.check(claudeRun(t, e, bin, model))
		})
	}
}

// TestClaudeCodeOwnModel runs Claude Code without --model: its own
// default (claude-opus-4-8 in 2.1.197) sends a system message among the
// messages, which the proxy must condense around (not forward unchanged),
// keeping it as sent, every request accepted by the strict fake.
func TestClaudeCodeOwnModel(t *testing.T) {
	bin := agents.Require(t, agents.Claude)
	e := newE2E(t, "messages", claudeWindow)
	e.check(claudeRun(t, e, bin, ""))
	systems := 0
	for _, r := range e.received() {
		if r.Path != "/v1/messages" || fakeupstream.IsSummaryRequest(r.Body) {
			continue
		}
		gjson.GetBytes(r.Body, "messages").ForEach(func(_, m gjson.Result) bool {
			if m.Get("role").Str == "system" {
				systems++
			}
			return true
		})
	}
	if systems == 0 {
		t.Errorf("no system message among the messages upstream received: is %s's default model still one that sends it?", bin)
	}
}

// claudeRun runs Claude Code with model through e's proxy ("": the
// agent's own default model, no --model).
func claudeRun(t *testing.T, e *e2e, bin, model string) agents.Result {
	return e.run(func() agents.Result {
		return agents.Run(agentContext(t), agents.ClaudeCommand(agents.ClaudeOptions{
			Bin: bin, BaseURL: e.stack.Proxy.URL, Home: e.home(), Workdir: e.workdir(), Model: model, OwnModel: model == "",
			Prompt: "Read the files of this directory one by one as the tools direct, then report.",
		}))
	})
}

// TestClaudeCodeAtTheDefaultThreshold runs Claude Code at a large window
// (80k) with condense.threshold and condense.target unset, as serve's
// defaults leave them: the model's threshold is 0.6 by its window, so
// requests between 60% and 80% of the window — which the suites' fixed
// 0.8 forwards as received — are condensed, to under 60%, and every
// request is accepted by the strict fake.
func TestClaudeCodeAtTheDefaultThreshold(t *testing.T) {
	bin := agents.Require(t, agents.Claude)
	e := newE2E(t, "messages", claudeWindow, withConfig(func(c *config.Config) {
		c.Condense.Threshold, c.Condense.Target = 0, 0
	}))
	e.check(claudeRun(t, e, bin, "claude-sonnet-4-5"))
	low, high := int(config.LargeWindowThreshold*claudeWindow), int(config.SmallWindowThreshold*claudeWindow)
	between := 0
	for _, x := range e.front.Exchanges() {
		if x.Method != http.MethodPost || !e.isTurn(x.Path) {
			continue
		}
		before, _ := strconv.Atoi(x.Response.Get("X-Condense-Tokens-Before"))
		after, _ := strconv.Atoi(x.Response.Get("X-Condense-Tokens-After"))
		applied := x.Response.Get("X-Condense-Applied")
		if before > low && applied == "none" {
			t.Errorf("a request of %d tokens, over 60%% of the %d-token window, forwarded as received", before, claudeWindow)
		}
		if applied != "none" && after > low {
			t.Errorf("a request condensed to %d tokens, over 60%% of the window (%d)", after, low)
		}
		if before > low && before <= high {
			between++
		}
	}
	if between == 0 {
		t.Fatalf("no request between 60%% and 80%% of the window: the test shows nothing")
	}
}
