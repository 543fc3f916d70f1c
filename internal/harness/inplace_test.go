package harness

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/condense-proxy/condense-proxy/condense"
)

// TestInPlaceRangeGemini: a summary asked in place of a Gemini request
// (the instruction the last user content's text) names contents.
func TestInPlaceRangeGemini(t *testing.T) {
	instruction := "Summarize messages 2 to 3 of this conversation, counting its first message as 1: from the one that begins “b” to the one that ends “c”."
	body := `{"contents":[{"role":"user","parts":[{"text":"a"}]},{"role":"model","parts":[{"text":"b"}]},` +
		`{"role":"user","parts":[{"functionResponse":{"name":"f","response":{"output":"c FAIL: TestX"}}}]},{"role":"model","parts":[{"text":"d error: late"}]},` +
		`{"role":"user","parts":[{"text":"` + instruction + `"}]}],"systemInstruction":{"parts":[{"text":"error: in the system"}]}}`
	items, got, ok := inPlaceRange([]byte(body))
	if !ok || got != instruction || len(items) != 2 || items[0].Get("parts.0.text").String() != "b" {
		t.Fatalf("range %v %q %d", ok, got, len(items))
	}
	// The faithful summary keeps the facts of the range only.
	_, summary := FaithfulSummaryOf(200)([]byte(body))
	if !strings.Contains(summary, "FAIL: TestX") || strings.Contains(summary, "late") || strings.Contains(summary, "in the system") {
		t.Errorf("summary %q", summary)
	}
}

// TestFaithfulSummarySkipsThePrompt: the faithful summarizer keeps the
// facts of what it is asked to merge, not the lines of its own
// instructions that mention errors and paths (the built-in prompt's
// "Keep exact file paths, … error messages", the merge's frame), which
// took room in every merged summary of the evaluation.
func TestFaithfulSummarySkipsThePrompt(t *testing.T) {
	user := condense.UserPrompt(condense.SummaryInput{Level: 2, Text: "- Decision: I will change a.go (decision 7).\n- → bash: exit 1 | ! --- FAIL: TestY"})
	body, _ := json.Marshal(map[string]any{"messages": []map[string]string{{"role": "system", "content": condense.DefaultPrompt}, {"role": "user", "content": user}}})
	_, summary := FaithfulSummaryOf(200)(body)
	if !strings.Contains(summary, "(decision 7)") || !strings.Contains(summary, "--- FAIL: TestY") {
		t.Errorf("the facts lost: %q", summary)
	}
	facts, _, _ := strings.Cut(summary, "## Task and intent")
	for _, l := range strings.Split(facts, "\n") {
		if l = strings.TrimPrefix(l, "- "); l != "" && l != "## Facts kept" && (strings.Contains(condense.DefaultPrompt, l) || strings.Contains(user, l) && !strings.Contains(l, "decision 7") && !strings.Contains(l, "TestY")) {
			t.Errorf("a line of the instructions kept as a fact: %q", l)
		}
	}
}
