package chat

import (
	"math/rand"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/condense-proxy/condense-proxy/selective"
	"github.com/condense-proxy/condense-proxy/tokenizer"
)

// The codec is what selective digests through.
var _ selective.Codec = (*Codec)(nil)

// TestTextReadsTheFirstContent: an item's text read from the scan's spans
// is the text of its first "content" (messageText's, gjson's), whatever
// the messages repeat or escape.
func TestTextReadsTheFirstContent(t *testing.T) {
	contents := []string{`"content":"ping 1"`, `"content":"a\"b"`, `"content":""`, `"content":null`, `"content":[{"type":"text","text":"t"}]`,
		`"c\u006fntent":"escaped"`, `"content":"second"`, `"name":"n"`, `"content":7`}
	rng := rand.New(rand.NewSource(37))
	c := New(tokenizer.New(tokenizer.Options{}))
	for i := 0; i < 3000; i++ {
		var b strings.Builder
		b.WriteString(`{"model":"gpt-4o","messages":[`)
		n := 1 + rng.Intn(5)
		for m := 0; m < n; m++ {
			if m > 0 {
				b.WriteByte(',')
			}
			b.WriteString(`{"role":"user"`)
			for f := rng.Intn(3); f > 0; f-- {
				b.WriteString("," + contents[rng.Intn(len(contents))])
			}
			b.WriteByte('}')
		}
		b.WriteString(`]}`)
		r, err := c.Scan([]byte(b.String()), func(string) string { return tokenizer.O200kBase })
		if err != nil {
			t.Fatalf("%s: %v", b.String(), err)
		}
		if err := c.Parse(r); err != nil {
			t.Fatalf("%s: %v", b.String(), err)
		}
		for m := range r.Items {
			if got, want := c.Text(r, m).Text, messageText(gjson.Parse(r.Raw(m))); got != want {
				t.Fatalf("%s: message %d text %q, want %q", r.Raw(m), m, got, want)
			}
		}
	}
}
