package compaction

import "testing"

// The agents' compaction instructions as they send them (the sources are
// cited in openings).
const (
	claudeCode = "CRITICAL: Respond with TEXT ONLY. Do NOT call any tools.\n\n- Do NOT use Read, Bash, Grep, Glob, Edit, Write, or ANY other tool.\n" +
		"- You already have all the context you need in the conversation above.\n\n" +
		"Your task is to create a detailed summary of the conversation so far, paying close attention to the user's explicit requests and your previous actions."
	claudeCodeRecent = "CRITICAL: Respond with TEXT ONLY. Do NOT call any tools.\n\nYour task is to create a detailed summary of the RECENT portion of the conversation \u2014 the messages that follow earlier retained context."
	claudeCodeOld    = "Your task is to create a detailed summary of the conversation so far, paying close attention to the user's explicit requests and your previous actions."
	codex            = "You are performing a CONTEXT CHECKPOINT COMPACTION. Create a handoff summary for another LLM that will resume the task.\n\nInclude:\n- Goal / user objective\n"
	roo              = "Summarize the conversation so far, as described in the prompt instructions."
	cline            = "<explicit_instructions type=\"summarize_task\">\nThe current conversation is rapidly running out of context. Now, your urgent task is to create a detailed, comprehensive summary of the conversation so far"
	opencodeSuffix   = "Summarize the older portion of the preceding conversation. This is a summarization task, not a request to continue the conversation.\n\nTreat the preceding conversation"
	opencodePrepend  = "Here is the conversation so far:\n\n<conversation>\n[User]: fix the bug\n</conversation>\n\nCreate a new anchored summary"
	opencodeOld      = "Provide a detailed prompt for continuing our conversation above. Focus on information that would be helpful for continuing the conversation"
	qwen             = "First, reason in your <analysis> block. Then, produce the <state_snapshot> XML."
	qwenOld          = "First, reason in your scratchpad. Then, generate the <state_snapshot>."
	openhands        = "You are maintaining a context-aware state summary for an interactive agent.\nYou will be given a list of events corresponding to actions taken by the agent"
	openhandsSW      = "You are maintaining a context-aware state summary for an interactive software agent. This summary is critical because it:\n"
)

// geminiVerify is Gemini CLI 0.61.0's second compression request, the
// verification of its snapshot.
const geminiVerify = "Critically evaluate the <state_snapshot> you just generated. Did you omit any specific technical details, file paths, tool results, or user constraints mentioned in the history? " +
	"If anything is missing or could be more precise, generate a FINAL, improved <state_snapshot>. Otherwise, repeat the exact same <state_snapshot> again."

func TestMatch(t *testing.T) {
	cases := []struct {
		name, text, want string
	}{
		{"claude code", claudeCode, "claude-code"},
		{"claude code, recent portion", claudeCodeRecent, "claude-code"},
		{"claude code, older versions", claudeCodeOld, "claude-code"},
		{"claude code preamble alone is another prompt", "CRITICAL: Respond with TEXT ONLY. Do NOT call any tools.\n\nName this session in five words.", ""},
		{"codex", codex, "codex"},
		{"roo code", roo, "roo-code"},
		{"cline", cline, "cline"},
		{"opencode suffix mode", opencodeSuffix, "opencode"},
		{"opencode prepend mode", opencodePrepend, "opencode"},
		{"opencode, older versions", opencodeOld, "opencode"},
		{"qwen-code", qwen, "qwen-code"},
		{"qwen-code, older versions", qwenOld, "qwen-code"},
		{"gemini-cli, the snapshot's verification", geminiVerify, "gemini-cli"},
		{"another tool's snapshot probe", "Critically evaluate the <state_snapshot> you just generated. Is it under 500 words?", ""},
		{"openhands", openhands, "openhands"},
		{"openhands structured", openhandsSW, "openhands"},
		{"leading white space", "\n  " + codex, "codex"},
		{"a user asking for a summary", "Please summarize the conversation so far.", ""},
		{"the instruction quoted inside a message", "My agent sends \"" + roo + "\": why?", ""},
		{"empty", "", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := Match(tc.text); got != tc.want {
				t.Errorf("Match = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestContent(t *testing.T) {
	cases := []struct {
		name, raw, want string
	}{
		{"string", `"Summarize the conversation so far, as described in the prompt instructions."`, "roo-code"},
		{"after a tool result and a reminder", `[{"type":"tool_result","tool_use_id":"t1","content":"ok"},{"type":"text","text":"<system-reminder>x</system-reminder>"},{"type":"text","text":"Your task is to create a detailed summary of the conversation so far"}]`, "claude-code"},
		{"Responses input_text", `[{"type":"input_text","text":"You are performing a CONTEXT CHECKPOINT COMPACTION. Create a handoff summary"}]`, "codex"},
		{"only in a tool result", `[{"type":"tool_result","tool_use_id":"t1","content":"Your task is to create a detailed summary of the conversation so far"}]`, ""},
		{"no text", `[{"type":"image","source":{}}]`, ""},
		{"not content", `{"a":1}`, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := Content(tc.raw); got != tc.want {
				t.Errorf("Content = %q, want %q", got, tc.want)
			}
		})
	}
}
