package chat

import (
	"encoding/json"
	"math/rand"
	"strings"
	"testing"

	"github.com/condense-proxy/condense-proxy/tokenizer"
)

// BenchmarkResentHistory counts a 1 MB chat request whose messages were all
// counted before (an agent resending its history).
func BenchmarkResentHistory(b *testing.B) {
	body := syntheticRequest(1 << 20)
	c := New(tokenizer.New(tokenizer.Options{}))
	if _, err := countBody(c, tokenizer.O200kBase, body); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		r, _ := countBody(c, tokenizer.O200kBase, body)
		if r.CacheHits != len(r.Items) {
			b.Fatal("not all messages cached")
		}
	}
}

func syntheticRequest(size int) []byte {
	type msg struct {
		Role    string `json:"role"`
		Content string `json:"content"`
	}
	msgs := []msg{{"system", "You are a coding agent."}, {"user", "Fix the failing test."}}
	rng := rand.New(rand.NewSource(2))
	n := 0
	for i := 0; n < size; i++ {
		var b strings.Builder
		for b.Len() < 2000+rng.Intn(8000) {
			b.WriteString("line of output with some code: x := compute(y, z) // comment\n")
		}
		role := []string{"assistant", "user"}[i%2]
		msgs = append(msgs, msg{role, b.String()})
		n += b.Len()
	}
	body, _ := json.Marshal(map[string]any{"model": "gpt-4o", "messages": msgs})
	return body
}
