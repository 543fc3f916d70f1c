// Package compaction recognizes a coding agent's own compaction request:
// the request in which the agent asks the model to summarize the
// conversation so far, before it replaces its history by that summary.
//
// The codecs call Match on the text of a request's last message when it
// is a user message (only that one: a match never latches a whole
// conversation), and set view.Request.Compaction to the name it returns;
// the engine then forwards the request byte for byte, or digests only its
// tool outputs when it does not fit the window (see package condense).
package compaction

import (
	"strings"

	"github.com/tidwall/gjson"
)

// An opening is the text an agent's compaction instruction starts with.
type opening struct {
	agent string // what view.Request.Compaction says
	text  string // the instruction opens with this (after leading white space)
	// also, when set, must appear in the same text (an opening shared
	// with other prompts of the agent).
	also string
}

// openings are the agents' compaction instructions, each taken from the
// agent's own source (or the pinned binary). Only a user message's text
// is matched; agents that send their summary prompt as the system prompt
// are matched by the short user message that goes with it.
var openings = []opening{
	// Claude Code 2.1.197 (the pinned binary's strings, functions building
	// the compact prompt): "CRITICAL: Respond with TEXT ONLY. Do NOT call
	// any tools." then, for a full compaction, "Your task is to create a
	// detailed summary of the conversation so far, …"; the partial
	// variants summarize "this conversation" (up_to) or "the RECENT
	// portion of the conversation" (from). Earlier versions open with
	// "Your task is to create …" itself.
	{agent: "claude-code", text: "CRITICAL: Respond with TEXT ONLY. Do NOT call any tools.", also: "Your task is to create a detailed summary of"},
	{agent: "claude-code", text: "Your task is to create a detailed summary of"},
	// Codex, local compaction (custom providers): openai/codex
	// codex-rs/core/templates/compact/prompt.md (11baefb5), the same text
	// in codex-cli 0.169.0's binary.
	{agent: "codex", text: "You are performing a CONTEXT CHECKPOINT COMPACTION."},
	// Roo Code: RooCodeInc/Roo-Code src/core/condense/index.ts (04fc2a02),
	// finalRequestMessage; SUMMARY_PROMPT goes as the system prompt.
	{agent: "roo-code", text: "Summarize the conversation so far, as described in the prompt instructions."},
	// Cline: cline/cline src/core/prompts/contextManagement.ts (046531b5),
	// summarizeTask(), a text block appended to the user message.
	{agent: "cline", text: `<explicit_instructions type="summarize_task">`},
	// opencode: sst/opencode packages/core/src/session/compaction-suffix.ts
	// (31e22f65) buildPrompt (suffix mode, the whole history then this),
	// packages/core/src/session/compaction.ts buildPrompt (prepend mode,
	// one message holding the transcript); earlier versions
	// (packages/opencode/src/session/compaction.ts): "Provide a detailed
	// prompt for continuing our conversation above. …".
	{agent: "opencode", text: "Summarize the older portion of the preceding conversation. This is a summarization task"},
	{agent: "opencode", text: "Here is the conversation so far:\n\n<conversation>"},
	{agent: "opencode", text: "Provide a detailed prompt for continuing our conversation above."},
	// qwen-code: QwenLM/qwen-code packages/core/src/services/
	// chatCompressionService.ts (00b481a3), the user turn after the
	// history (getCompressionPrompt() is the system instruction); earlier
	// versions (packages/core/src/core/client.ts tryCompressChat, as
	// gemini-cli): "First, reason in your scratchpad. Then, generate the
	// <state_snapshot>."
	{agent: "qwen-code", text: "First, reason in your <analysis> block. Then, produce the <state_snapshot> XML."},
	{agent: "qwen-code", text: "First, reason in your scratchpad. Then, generate the <state_snapshot>."},
	// Gemini CLI 0.61.0 (the pinned bundle, chatCompressionService's
	// summary request: the history, then a user turn of the anchor
	// instruction and this line; its system instruction is the
	// compression prompt).
	{agent: "gemini-cli", text: "Generate a new <state_snapshot> based on the provided history.", also: "Then, generate the updated <state_snapshot>."},
	{agent: "gemini-cli", text: "A previous <state_snapshot> exists in the history.", also: "Then, generate the updated <state_snapshot>."},
	// Its second request, the same history, the model's snapshot, then
	// this probe (the same service's verification turn).
	{agent: "gemini-cli", text: "Critically evaluate the <state_snapshot> you just generated.", also: "generate a FINAL, improved <state_snapshot>"},
	// OpenHands: All-Hands-AI/OpenHands openhands/memory/condenser/impl/
	// llm_summarizing_condenser.py (396b2c9f; "… for an interactive
	// agent.") and structured_summary_condenser.py ("… for an interactive
	// software agent."): one user message holding the events.
	{agent: "openhands", text: "You are maintaining a context-aware state summary for an interactive "},
}

// Match returns the agent whose compaction instruction text opens with,
// or "" when it is none.
func Match(text string) string {
	t := strings.TrimLeft(text, " \t\r\n")
	for _, o := range openings {
		if strings.HasPrefix(t, o.text) && (o.also == "" || strings.Contains(t, o.also)) {
			return o.agent
		}
	}
	return ""
}

// Content returns the agent whose compaction instruction opens the
// message content raw (a JSON string, or an array of parts or blocks),
// or "". Every text part is tried, not only the first: an agent may add
// its instruction after other blocks of the same message (tool results,
// system reminders).
func Content(raw string) string {
	v := gjson.Parse(raw)
	switch {
	case v.Type == gjson.String:
		return Match(v.Str)
	case v.IsArray():
		agent := ""
		v.ForEach(func(_, p gjson.Result) bool {
			switch p.Get("type").Str {
			case "text", "input_text":
				agent = Match(p.Get("text").String())
			}
			return agent == ""
		})
		return agent
	}
	return ""
}
