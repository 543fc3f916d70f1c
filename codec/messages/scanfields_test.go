package messages

import (
	"math/rand"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/condense-proxy/condense-proxy/codec/internal/codectest"
	"github.com/condense-proxy/condense-proxy/codec/internal/field"
	"github.com/condense-proxy/condense-proxy/tokenizer"
)

// TestScannedFieldsReadAsFound: what the scan found of each message's
// fields (items.Fields) gives the counts, the parse and the texts of the
// messages looked up afresh — on random messages that repeat, escape and
// reorder their keys, of string and block contents.
func TestScannedFieldsReadAsFound(t *testing.T) {
	fields := []string{`"role":"user"`, `"role":"assistant"`, `"content":"ping 1"`, `"content":"a\"b"`,
		`"content":[{"type":"text","text":"hi"}]`, `"content":[{"type":"tool_result","tool_use_id":"t1","content":"out"}]`,
		`"content":[{"type":"tool_use","id":"t1","name":"bash","input":{"c":1}}]`, `"content":null`,
		`"c\u006fntent":"escaped"`, `"r\u006fle":"user"`, `"name":"n"`, `"content":"second"`}
	c := New(tokenizer.New(tokenizer.Options{}))
	rng := rand.New(rand.NewSource(37))
	wellFormed := func() []string { return []string{fields[rng.Intn(2)], fields[2+rng.Intn(4)]} }
	count := func(raw string) int { return c.countMessage(tokenizer.O200kBase, raw) }
	parsed := 0
	for i := 0; i < 10000; i++ {
		body := codectest.RandomBody(rng, `{"model":"claude-sonnet-4-5","max_tokens":10,"messages":[`, fields, wellFormed)
		scanned := codectest.ScanReadsAsAfresh(t, c, body, count)
		if scanned == nil {
			continue
		}
		parsed++
		for m := range scanned.Items {
			if want := field.Get(scanned.Raw(m), "content"); want.Type == gjson.String && c.Text(scanned, m).Text != want.Str {
				t.Fatalf("%s: message %d text is not its first content", scanned.Raw(m), m)
			}
		}
	}
	if parsed < 1000 {
		t.Fatalf("only %d bodies parsed", parsed)
	}
}
