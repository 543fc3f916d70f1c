package harness

import (
	"strings"
	"testing"
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
