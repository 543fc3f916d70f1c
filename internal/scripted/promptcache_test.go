package scripted

import (
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"
)

// TestPromptCache: the answers report a provider's prompt cache — a
// request repeating an earlier one reads its prompt from the cache, a
// changed first message or a gap past the cache's life reads nothing,
// and a Messages request marking cache_control writes what it does not
// read.
func TestPromptCache(t *testing.T) {
	cached := map[string]string{"chat": "usage.prompt_tokens_details.cached_tokens",
		"messages": "usage.cache_read_input_tokens", "responses": "usage.input_tokens_details.cached_tokens",
		"gemini": "usageMetadata.cachedContentTokenCount"}
	prompt := map[string]string{"chat": "usage.prompt_tokens", "responses": "usage.input_tokens", "gemini": "usageMetadata.promptTokenCount"}
	long := strings.Repeat("the build log says nothing new here; ", 400)
	for _, a := range apis() {
		t.Run(a.name, func(t *testing.T) {
			u := New(Options{Delay: -1})
			now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
			u.now = func() time.Time { return now }
			srv := httptest.NewServer(u)
			defer srv.Close()
			key := map[string]string{"chat": "messages", "messages": "messages", "responses": "input", "gemini": "contents"}[a.name]
			last := fmt.Sprintf("%s.%d.content", key, gjson.Get(a.first, key+".#").Int()-1)
			if a.name == "gemini" {
				last = fmt.Sprintf("%s.%d.parts.0.text", key, gjson.Get(a.first, key+".#").Int()-1)
			}
			body, err := sjson.SetBytes([]byte(a.first), last, long)
			if err != nil {
				t.Fatal(err)
			}
			read := func(b []byte) (read, total int64) {
				t.Helper()
				_, ans := post(t, srv.URL+a.path, b)
				u := gjson.ParseBytes(ans)
				total = u.Get(prompt[a.name]).Int()
				if a.name == "messages" {
					total = u.Get("usage.input_tokens").Int() + u.Get("usage.cache_read_input_tokens").Int() + u.Get("usage.cache_creation_input_tokens").Int()
				}
				return u.Get(cached[a.name]).Int(), total
			}
			if r, total := read(body); r != 0 || total < 2000 {
				t.Fatalf("first request: %d of %d read from the cache, want 0 of over 2000", r, total)
			}
			if r, total := read(body); r != total {
				t.Fatalf("repeated request: %d of %d read, want all", r, total)
			}
			now = now.Add(cacheLife + time.Second)
			if r, _ := read(body); r != 0 {
				t.Fatalf("after the cache's life: %d read, want 0", r)
			}
			changed, _ := sjson.SetBytes(body, last, "changed "+long)
			if r, _ := read(changed); r != 0 {
				t.Fatalf("changed last message: %d read, want 0 (the rest is under %d)", r, minCached)
			}
			if a.name != "messages" {
				return
			}
			marked, _ := sjson.SetRawBytes(body, "system.0.cache_control", []byte(`{"type":"ephemeral"}`))
			_, ans := post(t, srv.URL+a.path, marked)
			if w := gjson.GetBytes(ans, "usage.cache_creation_input_tokens").Int(); w < 2000 || gjson.GetBytes(ans, "usage.input_tokens").Int() != 0 {
				t.Fatalf("cache_control: usage %s, want the whole prompt written", gjson.GetBytes(ans, "usage").Raw)
			}
		})
	}
}
