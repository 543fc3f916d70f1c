package responses

import (
	"math/rand"
	"testing"

	"github.com/condense-proxy/condense-proxy/codec/internal/codectest"
	"github.com/condense-proxy/condense-proxy/tokenizer"
)

// TestScannedFieldsReadAsFound: what the scan found of each item's
// fields (items.Fields) gives the counts, the parse and the texts of the
// items looked up afresh — on random items that repeat, escape and
// reorder their keys, messages, calls and outputs.
func TestScannedFieldsReadAsFound(t *testing.T) {
	fields := []string{`"type":"message"`, `"type":"function_call_output"`, `"role":"user"`, `"role":"assistant"`,
		`"content":"ping 1"`, `"content":[{"type":"input_text","text":"hi"}]`, `"call_id":"c1"`, `"output":"out"`, `"output":[{"type":"input_text","text":"o"}]`,
		`"content":"a\"b"`, `"name":"bash"`, `"arguments":"{}"`, `"type":"function_call"`, `"id":"x"`, `"t\u0079pe":"message"`, `"content":"second"`, `"status":"completed"`}
	c := New(tokenizer.New(tokenizer.Options{}))
	rng := rand.New(rand.NewSource(37))
	// Most items are well formed messages: a type, a role and a content.
	wellFormed := func() []string {
		return []string{fields[rng.Intn(2)], fields[2+rng.Intn(2)], fields[4+rng.Intn(6)]}
	}
	count := func(raw string) int { return c.countItem(tokenizer.O200kBase, raw) }
	parsed := 0
	for i := 0; i < 10000; i++ {
		body := codectest.RandomBody(rng, `{"model":"gpt-4o","input":[`, fields, wellFormed)
		if codectest.ScanReadsAsAfresh(t, c, body, count) != nil {
			parsed++
		}
	}
	if parsed < 1000 {
		t.Fatalf("only %d bodies parsed", parsed)
	}
}
