package proxy

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/condense-proxy/condense-proxy/internal/fakeupstream"
)

// geminiBody is a Gemini CLI-like request of n tool steps, each output
// large.
func geminiBody(n int) []byte {
	var cs []string
	add := func(v any) {
		b, _ := json.Marshal(v)
		cs = append(cs, string(b))
	}
	add(map[string]any{"role": "user", "parts": []any{map[string]any{"text": "Fix the tests."}}})
	for i := 0; i < n; i++ {
		id := fmt.Sprintf("c%d", i)
		add(map[string]any{"role": "model", "parts": []any{map[string]any{"functionCall": map[string]any{"id": id, "name": "read_file", "args": map[string]any{"path": fmt.Sprint(i)}}}}})
		add(map[string]any{"role": "user", "parts": []any{map[string]any{"functionResponse": map[string]any{"id": id, "name": "read_file",
			"response": map[string]any{"output": strings.Repeat(fmt.Sprintf("line %d of a file that is long enough\n", i), 120)}}}}})
	}
	return []byte(`{"contents":[` + strings.Join(cs, ",") + `],"systemInstruction":{"parts":[{"text":"You are a CLI agent."}]},"generationConfig":{"temperature":0}}`)
}

// TestGeminiRoutes: a streamed generateContent over the threshold is
// condensed into a request the strict fake accepts, the model taken from
// the path, the key from ?key= scoping the caller as x-goog-api-key
// does and forwarded as received; countTokens counts what would be
// forwarded; other Gemini paths pass through, errors in Google's shape.
func TestGeminiRoutes(t *testing.T) {
	fake := &fakeupstream.Gemini{Window: 16000, Delay: -1}
	h := newHarness(t, fake, func(o *Options) { o.Condenser = smallWindowEngine() })
	body := geminiBody(30)
	resp := post(t, h.proxy.URL+"/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse&key=secret-k", body, map[string]string{"X-Condense-Mode": "full"})
	answer, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Header.Get(HeaderApplied) == "none" || !strings.Contains(string(answer), "data: ") {
		t.Fatalf("status %d applied %q: %s", resp.StatusCode, resp.Header.Get(HeaderApplied), answer)
	}
	got := fake.Received()
	if len(got) != 1 || got[0].Status != http.StatusOK || got[0].Path != "/v1beta/models/gemini-2.5-pro:streamGenerateContent" ||
		!strings.Contains(got[0].Query, "key=secret-k") || len(got[0].Body) >= len(body) {
		t.Fatalf("upstream got %+v", got)
	}
	logs := h.waitLog(t, `"route":"gemini"`)
	if strings.Contains(logs, "secret-k") || !strings.Contains(logs, "gemini-2.5-pro") {
		t.Fatalf("the key is logged, or the model is not:\n%s", logs)
	}
	count := post(t, h.proxy.URL+"/v1beta/models/gemini-2.5-pro:countTokens", []byte(`{"contents":`+gjson.GetBytes(body, "contents").Raw+`}`), map[string]string{"x-goog-api-key": "secret-k"})
	c, _ := io.ReadAll(count.Body)
	count.Body.Close()
	if n := gjson.GetBytes(c, "totalTokens").Int(); count.StatusCode != http.StatusOK || n == 0 || n > 16000 {
		t.Fatalf("countTokens %d: %s", count.StatusCode, c)
	}
	other, err := http.Get(h.proxy.URL + "/v1beta/models/gemini-2.5-pro")
	if err != nil {
		t.Fatal(err)
	}
	o, _ := io.ReadAll(other.Body)
	other.Body.Close()
	if other.StatusCode != http.StatusNotFound || gjson.GetBytes(o, "error.status").Str != "NOT_FOUND" {
		t.Fatalf("passthrough: %d %s", other.StatusCode, o)
	}
	// Errors the proxy answers itself are Google's.
	hk := newHarness(t, fake, func(o *Options) { o.AuthKeys = []string{"inbound"} })
	r := post(t, hk.proxy.URL+"/v1beta/models/gemini-2.5-pro:generateContent", body, nil)
	e, _ := io.ReadAll(r.Body)
	r.Body.Close()
	if r.StatusCode != http.StatusUnauthorized || gjson.GetBytes(e, "error.status").Str != "UNAUTHENTICATED" {
		t.Fatalf("401: %s", e)
	}
}

// TestGeminiQueryKeyScopes: ?key= scopes the caller as x-goog-api-key
// does, and two keys make two scopes.
func TestGeminiQueryKeyScopes(t *testing.T) {
	s := NewScoper([]byte("s"), nil)
	scope := func(target string, hdr http.Header) string {
		r, _ := http.NewRequest(http.MethodPost, target, nil)
		r.Header = hdr
		ri := &reqInfo{}
		r = r.WithContext(context.WithValue(r.Context(), ctxKey{}, ri))
		ri.queryKey = r.URL.Query().Get("key")
		return s.Scope(callerHeader(r))
	}
	a := scope("http://x/v1beta/models/m:generateContent?key=A", http.Header{})
	b := scope("http://x/v1beta/models/m:generateContent", http.Header{"X-Goog-Api-Key": {"A"}})
	c := scope("http://x/v1beta/models/m:generateContent?key=B", http.Header{})
	if a != b || a == c {
		t.Fatalf("scopes %s %s %s", a, b, c)
	}
}
