package proxy

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"compress/zlib"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/condense-proxy/condense-proxy/codec/chat"
	"github.com/condense-proxy/condense-proxy/condense"
	"github.com/condense-proxy/condense-proxy/internal/fakeupstream"
	"github.com/condense-proxy/condense-proxy/tokenizer"
)

type harness struct {
	upstream *httptest.Server
	fake     *fakeupstream.Server
	proxy    *httptest.Server
	logs     *syncBuffer
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func testEngine() *condense.Engine {
	return condense.New(condense.Deps{Counter: tokenizer.New(tokenizer.Options{}), Models: condense.ModelsFunc(func(string) condense.ModelLimits {
		return condense.ModelLimits{Window: 128000, Threshold: 0.8, Encoding: tokenizer.O200kBase, SafetyFactor: 1}
	})}, condense.Options{})
}

// newHarness chains a proxy in front of upstream (the strict fake when nil).
func newHarness(t *testing.T, upstream http.Handler, mutate ...func(*Options)) *harness {
	t.Helper()
	h := &harness{logs: &syncBuffer{}}
	if upstream == nil {
		h.fake = fakeupstream.New()
		upstream = h.fake
	}
	h.upstream = httptest.NewServer(upstream)
	t.Cleanup(h.upstream.Close)
	u, _ := url.Parse(h.upstream.URL)
	o := Options{
		Upstream:  u,
		Condenser: testEngine(),
		Logger:    slog.New(slog.NewJSONHandler(h.logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
	}
	for _, m := range mutate {
		m(&o)
	}
	h.proxy = httptest.NewServer(New(o))
	t.Cleanup(h.proxy.Close)
	return h
}

// waitLog waits for the log to contain want (the log line is written when
// the handler returns, which may be after the client has its answer) and
// returns the log; the test fails when want does not come within 10 s, so
// a check that something is absent from the log never passes on a log
// that was not written yet.
func (h *harness) waitLog(t *testing.T, want string) string {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		logs := h.logs.String()
		if strings.Contains(logs, want) {
			return logs
		}
		if time.Now().After(deadline) {
			t.Fatalf("the log has no %s after 10 s:\n%s", want, logs)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func post(t *testing.T, url string, body []byte, hdr map[string]string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

const chatBody = `{ "model" : "gpt-4o",
  "messages": [ {"role":"system","content":"Be brief."}, {"role":"user","content":"héllo \u00e9 world","x_custom":{"keep":[1,2]}} ],
  "temperature": 0.2, "unknown_field": {"nested": true}  }`

func TestChatPassThroughIsByteIdentical(t *testing.T) {
	h := newHarness(t, nil)
	resp := post(t, h.proxy.URL+"/v1/chat/completions", []byte(chatBody), map[string]string{
		"Authorization": "Bearer sk-secret-123", "X-Condense-Mode": "full", "OpenAI-Organization": "org-1",
	})
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	got := h.fake.Received()
	if len(got) != 1 {
		t.Fatalf("upstream got %d requests", len(got))
	}
	if !bytes.Equal(got[0].Body, []byte(chatBody)) {
		t.Errorf("body changed in transit:\n got %s\nwant %s", got[0].Body, chatBody)
	}
	if got[0].Header.Get("Authorization") != "Bearer sk-secret-123" || got[0].Header.Get("OpenAI-Organization") != "org-1" {
		t.Errorf("headers not passed: %v", got[0].Header)
	}
	if got[0].Header.Get("X-Condense-Mode") != "" {
		t.Error("X-Condense-Mode forwarded upstream")
	}
	if resp.Header.Get(HeaderApplied) != "none" {
		t.Errorf("%s = %q", HeaderApplied, resp.Header.Get(HeaderApplied))
	}
	before := resp.Header.Get(HeaderTokensBefore)
	if before == "" || before == "0" || before != resp.Header.Get(HeaderTokensAfter) {
		t.Errorf("token headers before=%q after=%q", before, resp.Header.Get(HeaderTokensAfter))
	}
	logs := h.waitLog(t, `"route":"chat"`)
	if strings.Contains(logs, "sk-secret-123") || strings.Contains(logs, "héllo") {
		t.Errorf("log leaks a key or a body:\n%s", logs)
	}
	if !strings.Contains(logs, `"tokens_before":`) || !strings.Contains(logs, `"route":"chat"`) {
		t.Errorf("request log line missing fields:\n%s", logs)
	}
}

func TestUnparsableBodyForwardedUnchanged(t *testing.T) {
	for _, body := range []string{`{"model":"gpt-4o","messages":[{"role":"user"`, `not json at all`, `{"model":"gpt-4o"}`, `{"messages":"x"}`} {
		h := newHarness(t, nil)
		resp := post(t, h.proxy.URL+"/v1/chat/completions", []byte(body), nil)
		answer, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		got := h.fake.Received()
		if len(got) != 1 || string(got[0].Body) != body {
			t.Fatalf("%q: upstream got %v", body, got)
		}
		if resp.StatusCode != 400 || !strings.Contains(string(answer), "error") {
			t.Errorf("%q: status %d body %s, want the upstream's 400", body, resp.StatusCode, answer)
		}
		if resp.Header.Get(HeaderTokensBefore) != "" {
			t.Errorf("%q: token header on an unparsable body", body)
		}
	}
}

func TestStrictUpstreamErrorPassesThrough(t *testing.T) {
	h := newHarness(t, nil)
	body := `{"model":"gpt-4o","messages":[{"role":"user","content":"x"},{"role":"tool","tool_call_id":"c9","content":"orphan"}]}`
	resp := post(t, h.proxy.URL+"/v1/chat/completions", []byte(body), nil)
	answer, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 400 || !strings.Contains(string(answer), "tool_calls") {
		t.Fatalf("status %d body %s", resp.StatusCode, answer)
	}
}

func TestOtherPathsPassThrough(t *testing.T) {
	h := newHarness(t, nil)
	tests := []struct {
		method, path string
		body         string
	}{
		{"GET", "/v1/models", ""},
		{"POST", "/v1/embeddings", `{"input":"x","model":"text-embedding-3-small"}`},
		{"POST", "/v1/responses", `{"input":"x"}`},
		{"POST", "/v1/messages", `{"messages":[]}`},
		{"GET", "/v1/chat/completions", ""},
	}
	for _, tc := range tests {
		h.fake.Reset()
		req, _ := http.NewRequest(tc.method, h.proxy.URL+tc.path+"?q=1", strings.NewReader(tc.body))
		req.Header.Set("anthropic-version", "2023-06-01")
		req.Header.Set("anthropic-beta", "tools-2024")
		req.Header.Set("X-Condense-Force", "true")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		got := h.fake.Received()
		if len(got) != 1 {
			t.Fatalf("%s %s: upstream got %d requests", tc.method, tc.path, len(got))
		}
		r := got[0]
		if r.Method != tc.method || r.Path != tc.path || string(r.Body) != tc.body {
			t.Errorf("%s %s: upstream saw %s %s %q", tc.method, tc.path, r.Method, r.Path, r.Body)
		}
		if r.Header.Get("anthropic-version") != "2023-06-01" || r.Header.Get("anthropic-beta") != "tools-2024" {
			t.Errorf("%s: headers lost", tc.path)
		}
		if r.Header.Get("X-Condense-Force") != "" {
			t.Errorf("%s: X-Condense-Force forwarded", tc.path)
		}
		if resp.Header.Get(HeaderApplied) != "" {
			t.Errorf("%s: condense headers on a pass-through", tc.path)
		}
	}
}

func TestUpstreamBasePathIsPrefix(t *testing.T) {
	fake := fakeupstream.New()
	up := httptest.NewServer(fake)
	defer up.Close()
	u, _ := url.Parse(up.URL + "/litellm")
	p := httptest.NewServer(New(Options{Upstream: u, Condenser: testEngine(), Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}))
	defer p.Close()
	resp := post(t, p.URL+"/v1/chat/completions", []byte(chatBody), nil)
	resp.Body.Close()
	if got := fake.Received(); len(got) != 1 || got[0].Path != "/litellm/v1/chat/completions" {
		t.Fatalf("upstream path %v", got)
	}
}

func compress(t *testing.T, enc string, data []byte) []byte {
	var b bytes.Buffer
	switch enc {
	case "gzip":
		w := gzip.NewWriter(&b)
		w.Write(data)
		w.Close()
	case "deflate":
		w := zlib.NewWriter(&b)
		w.Write(data)
		w.Close()
	case "zstd":
		w, _ := zstd.NewWriter(&b)
		w.Write(data)
		w.Close()
	}
	return b.Bytes()
}

func TestContentEncodingDecoded(t *testing.T) {
	for _, enc := range []string{"gzip", "deflate", "zstd"} {
		t.Run(enc, func(t *testing.T) {
			h := newHarness(t, nil)
			resp := post(t, h.proxy.URL+"/v1/chat/completions", compress(t, enc, []byte(chatBody)), map[string]string{"Content-Encoding": enc})
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			got := h.fake.Received()
			if len(got) != 1 || !bytes.Equal(got[0].Body, []byte(chatBody)) {
				t.Fatalf("upstream did not get the decoded body: %v", got)
			}
			if got[0].Header.Get("Content-Encoding") != "" {
				t.Error("Content-Encoding forwarded with a decoded body")
			}
			if resp.StatusCode != 200 || resp.Header.Get(HeaderTokensBefore) == "" {
				t.Errorf("status %d, tokens header %q", resp.StatusCode, resp.Header.Get(HeaderTokensBefore))
			}
		})
	}
}

func TestCorruptEncodingForwardedAsReceived(t *testing.T) {
	h := newHarness(t, nil)
	raw := []byte("\x1f\x8bnot really gzip")
	resp := post(t, h.proxy.URL+"/v1/chat/completions", raw, map[string]string{"Content-Encoding": "gzip"})
	resp.Body.Close()
	got := h.fake.Received()
	if len(got) != 1 || !bytes.Equal(got[0].Body, raw) || got[0].Header.Get("Content-Encoding") != "gzip" {
		t.Fatalf("corrupt body not forwarded as received: %v", got)
	}
}

func TestSizeLimits(t *testing.T) {
	h := newHarness(t, nil, func(o *Options) {
		o.MaxBodyBytes = 1 << 10
		o.MaxDecompressedBytes = 4 << 10
	})
	big := []byte(`{"model":"gpt-4o","messages":[{"role":"user","content":"` + strings.Repeat("a", 2000) + `"}]}`)
	bomb := []byte(`{"model":"gpt-4o","messages":[{"role":"user","content":"` + strings.Repeat("a", 100000) + `"}]}`)
	for name, tc := range map[string]struct {
		body []byte
		hdr  map[string]string
	}{
		"raw body": {big, nil},
		"zip bomb": {compress(t, "gzip", bomb), map[string]string{"Content-Encoding": "gzip"}},
	} {
		resp := post(t, h.proxy.URL+"/v1/chat/completions", tc.body, tc.hdr)
		var e struct {
			Error struct{ Message, Type string }
		}
		json.NewDecoder(resp.Body).Decode(&e)
		resp.Body.Close()
		if resp.StatusCode != http.StatusRequestEntityTooLarge || e.Error.Type != "invalid_request_error" || e.Error.Message == "" {
			t.Errorf("%s: status %d error %+v", name, resp.StatusCode, e)
		}
	}
	if n := len(h.fake.Received()); n != 0 {
		t.Errorf("upstream got %d oversized requests", n)
	}
}

// slowStream is an upstream that sends one SSE chunk, then waits for the
// test to release it before finishing.
type slowStream struct {
	release  chan struct{}
	canceled chan struct{}
	failMid  bool
}

func (s *slowStream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	io.Copy(io.Discard, r.Body)
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(200)
	io.WriteString(w, "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"first\"}}]}\n\n")
	w.(http.Flusher).Flush()
	select {
	case <-s.release:
	case <-r.Context().Done():
		close(s.canceled)
		return
	}
	if s.failMid {
		panic(http.ErrAbortHandler) // drop the connection mid-stream
	}
	io.WriteString(w, "data: [DONE]\n\n")
}

func TestStreamingReachesClientChunkByChunk(t *testing.T) {
	up := &slowStream{release: make(chan struct{}), canceled: make(chan struct{})}
	h := newHarness(t, up)
	resp := post(t, h.proxy.URL+"/v1/chat/completions", []byte(`{"model":"gpt-4o","stream":true,"messages":[{"role":"user","content":"hi"}]}`), nil)
	defer resp.Body.Close()
	br := bufio.NewReader(resp.Body)
	line, err := br.ReadString('\n')
	if err != nil || !strings.Contains(line, "first") {
		t.Fatalf("first chunk not delivered before the upstream finished: %q %v", line, err)
	}
	close(up.release)
	rest, _ := io.ReadAll(br)
	if !strings.Contains(string(rest), "[DONE]") {
		t.Fatalf("stream end missing: %q", rest)
	}
}

func TestClientCancelCancelsUpstream(t *testing.T) {
	up := &slowStream{release: make(chan struct{}), canceled: make(chan struct{})}
	h := newHarness(t, up)
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "POST", h.proxy.URL+"/v1/chat/completions", strings.NewReader(`{"model":"gpt-4o","stream":true,"messages":[{"role":"user","content":"hi"}]}`))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	bufio.NewReader(resp.Body).ReadString('\n')
	cancel()
	resp.Body.Close()
	select {
	case <-up.canceled:
	case <-time.After(5 * time.Second):
		t.Fatal("upstream request not cancelled after the client left")
	}
}

func TestMidStreamFailureAbortsClient(t *testing.T) {
	up := &slowStream{release: make(chan struct{}), canceled: make(chan struct{}), failMid: true}
	h := newHarness(t, up)
	resp := post(t, h.proxy.URL+"/v1/chat/completions", []byte(`{"model":"gpt-4o","stream":true,"messages":[{"role":"user","content":"hi"}]}`), nil)
	defer resp.Body.Close()
	br := bufio.NewReader(resp.Body)
	br.ReadString('\n')
	close(up.release)
	rest, err := io.ReadAll(br)
	if err == nil {
		t.Fatalf("stream ended cleanly after an upstream failure; got %q", rest)
	}
	if strings.Contains(string(rest), "[DONE]") {
		t.Fatal("fake clean ending appended")
	}
	deadline := time.Now().Add(2 * time.Second)
	for !strings.Contains(h.logs.String(), "connection aborted") {
		if time.Now().After(deadline) {
			t.Fatalf("abort not logged:\n%s", h.logs.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestUpstreamDownIs502(t *testing.T) {
	u, _ := url.Parse("http://127.0.0.1:1")
	p := httptest.NewServer(New(Options{Upstream: u, Condenser: testEngine(), Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}))
	defer p.Close()
	resp := post(t, p.URL+"/v1/chat/completions", []byte(chatBody), nil)
	var e struct{ Error struct{ Type string } }
	json.NewDecoder(resp.Body).Decode(&e)
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadGateway || e.Error.Type != "upstream_error" {
		t.Fatalf("status %d error %+v", resp.StatusCode, e)
	}
}

func TestUpstreamStatusPassesThrough(t *testing.T) {
	up := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "7")
		w.WriteHeader(429)
		io.WriteString(w, `{"error":{"message":"rate limited"}}`)
	})
	h := newHarness(t, up)
	resp := post(t, h.proxy.URL+"/v1/chat/completions", []byte(chatBody), nil)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 429 || resp.Header.Get("Retry-After") != "7" || string(body) != `{"error":{"message":"rate limited"}}` {
		t.Fatalf("status %d body %s", resp.StatusCode, body)
	}
}

func TestStatusFor(t *testing.T) {
	tests := []struct {
		err  error
		want int
	}{
		{context.Canceled, StatusClientClosed},
		{context.DeadlineExceeded, http.StatusGatewayTimeout},
		{&url.Error{Op: "Post", Err: context.Canceled}, StatusClientClosed},
		{io.ErrUnexpectedEOF, http.StatusBadGateway},
	}
	for _, tc := range tests {
		if got := statusFor(tc.err); got != tc.want {
			t.Errorf("statusFor(%v) = %d, want %d", tc.err, got, tc.want)
		}
	}
}

func TestHealthReadyMetrics(t *testing.T) {
	h := newHarness(t, nil)
	resp := post(t, h.proxy.URL+"/v1/chat/completions", []byte(chatBody), nil)
	resp.Body.Close()
	for path, want := range map[string]string{
		"/healthz": `"ok"`,
		"/readyz":  `"ready":true`,
		"/metrics": `condense_requests_total{route="chat",status="200"} 1`,
	} {
		// The request counter is updated when the chat handler returns,
		// which may be after the client has its answer: poll.
		var body []byte
		var status int
		for deadline := time.Now().Add(2 * time.Second); ; time.Sleep(5 * time.Millisecond) {
			resp, err := http.Get(h.proxy.URL + path)
			if err != nil {
				t.Fatal(err)
			}
			body, _ = io.ReadAll(resp.Body)
			resp.Body.Close()
			status = resp.StatusCode
			if (status == 200 && strings.Contains(string(body), want)) || time.Now().After(deadline) {
				break
			}
		}
		if status != 200 || !strings.Contains(string(body), want) {
			t.Errorf("%s: %d %s", path, status, body)
		}
	}
	if got := h.fake.Received(); len(got) != 1 {
		t.Errorf("health endpoints reached the upstream: %d requests", len(got))
	}
}

type downCache struct{}

func (downCache) Ping(context.Context) error { return io.ErrClosedPipe }

func TestOpenAISDKThroughProxy(t *testing.T) {
	h := newHarness(t, nil)
	client := openai.NewClient(option.WithBaseURL(h.proxy.URL+"/v1/"), option.WithAPIKey("sk-sdk"), option.WithMaxRetries(0))
	ctx := context.Background()
	params := openai.ChatCompletionNewParams{
		Model:    openai.ChatModelGPT4o,
		Messages: []openai.ChatCompletionMessageParamUnion{openai.SystemMessage("Be brief."), openai.UserMessage("Say done.")},
	}
	var raw *http.Response
	comp, err := client.Chat.Completions.New(ctx, params, option.WithResponseInto(&raw))
	if err != nil {
		t.Fatal(err)
	}
	if len(comp.Choices) != 1 || comp.Choices[0].Message.Content != "Done." {
		t.Fatalf("completion %+v", comp.Choices)
	}
	if raw.Header.Get(HeaderApplied) != "none" {
		t.Errorf("SDK response lacks %s", HeaderApplied)
	}

	h.fake.Chunks = 4
	stream := client.Chat.Completions.NewStreaming(ctx, params)
	var text strings.Builder
	chunks := 0
	for stream.Next() {
		c := stream.Current()
		if len(c.Choices) > 0 {
			text.WriteString(c.Choices[0].Delta.Content)
		}
		chunks++
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if text.String() != "Done. part1 part2 part3" || chunks != 5 {
		t.Fatalf("streamed %q in %d chunks", text.String(), chunks)
	}
	got := h.fake.Received()
	if len(got) != 2 || got[0].Header.Get("Authorization") != "Bearer sk-sdk" {
		t.Fatalf("upstream saw %d requests", len(got))
	}
}

func TestScopeIsKeyedHashOfCredentials(t *testing.T) {
	sc := NewScoper([]byte("secret-1"), nil)
	hdr := func(kv ...string) http.Header {
		h := http.Header{}
		for i := 0; i < len(kv); i += 2 {
			h.Add(kv[i], kv[i+1])
		}
		return h
	}
	differ := []struct {
		name string
		a, b http.Header
	}{
		{"bearer keys", hdr("Authorization", "Bearer sk-a"), hdr("Authorization", "Bearer sk-b")},
		{"x-api-key", hdr("x-api-key", "a"), hdr("x-api-key", "b")},
		{"api-key", hdr("api-key", "a"), hdr("api-key", "b")},
		{"LiteLLM virtual keys", hdr("x-litellm-api-key", "sk-team-a"), hdr("x-litellm-api-key", "sk-team-b")},
		{"Gemini keys", hdr("x-goog-api-key", "a"), hdr("x-goog-api-key", "b")},
		{"a key against none", hdr("x-litellm-api-key", "a"), hdr()},
		{"same value, other header", hdr("x-api-key", "k"), hdr("api-key", "k")},
		{"values are not concatenated", hdr("x-api-key", "ab"), hdr("x-api-key", "a", "x-api-key", "b")},
	}
	for _, tc := range differ {
		t.Run(tc.name, func(t *testing.T) {
			if sc.Scope(tc.a) == sc.Scope(tc.b) {
				t.Errorf("%v and %v share a scope", tc.a, tc.b)
			}
		})
	}
	a := hdr("Authorization", "Bearer sk-a", "User-Agent", "agent/1")
	if sc.Scope(a) != sc.Scope(hdr("authorization", "Bearer sk-a", "User-Agent", "agent/2")) {
		t.Error("scope depends on a header that is not a scope header")
	}
	if s := sc.Scope(a); len(s) != 32 || strings.Contains(s, "sk-a") {
		t.Errorf("scope %q", s)
	}
	if sc.Scope(a) == NewScoper([]byte("secret-2"), nil).Scope(a) {
		t.Error("the scope does not depend on the secret")
	}
	if sc.Scope(a) != NewScoper([]byte("secret-1"), nil).Scope(a) {
		t.Error("the same secret gives another scope (a restart would lose every scope)")
	}
	if NewScoper(nil, nil).Scope(a) == NewScoper(nil, nil).Scope(a) {
		t.Error("no secret: two Scopers share one, guessable")
	}

	// Configured headers: callers without credentials (a local model)
	// told apart by a header of the operator's choice.
	local := NewScoper([]byte("secret-1"), []string{"x-user", "Authorization"})
	if local.Scope(hdr("X-User", "ann")) == local.Scope(hdr("X-User", "bob")) {
		t.Error("configured scope header ignored")
	}
	if local.Scope(hdr("x-api-key", "a")) != local.Scope(hdr("x-api-key", "b")) {
		t.Error("a header outside the configured list changes the scope")
	}
}

// TestSummarizerCredentials: the summarizer's calls carry the credential
// headers (the one list), the configured scope headers and the account
// and version headers a Messages summary needs; nothing else.
func TestSummarizerCredentials(t *testing.T) {
	in := http.Header{}
	for _, k := range []string{"Authorization", "X-Api-Key", "Api-Key", "X-Litellm-Api-Key", "X-Goog-Api-Key",
		"OpenAI-Organization", "OpenAI-Project", "Anthropic-Version", "Anthropic-Beta", "X-Team"} {
		in.Set(k, "v-"+k)
	}
	in.Set("Cookie", "c")
	in.Set("User-Agent", "agent")
	in.Set(HeaderMode, "full")
	got := NewScoper([]byte("s"), []string{"Authorization", "X-Team"}).Credentials(in)
	for k := range in {
		_, copied := got[k]
		want := k != "Cookie" && k != "User-Agent" && k != HeaderMode
		if copied != want {
			t.Errorf("%s copied: %v, want %v", k, copied, want)
		}
	}
	if got.Get("Anthropic-Beta") != "v-Anthropic-Beta" {
		t.Errorf("anthropic-beta %q", got.Get("Anthropic-Beta"))
	}
}

func TestInboundAuth(t *testing.T) {
	h := newHarness(t, nil, func(o *Options) { o.AuthKeys = []string{"proxy-key-1", "proxy-key-2"} })
	tests := []struct {
		name string
		hdr  map[string]string
		want int
	}{
		{"no key", nil, 401},
		{"wrong key", map[string]string{"Authorization": "Bearer nope"}, 401},
		{"bearer key", map[string]string{"Authorization": "Bearer proxy-key-2"}, 200},
		{"x-api-key", map[string]string{"X-Api-Key": "proxy-key-1"}, 200},
		{"api-key", map[string]string{"Api-Key": "proxy-key-1"}, 200},
		{"bearer in lower case", map[string]string{"Authorization": "bearer proxy-key-1"}, 200},
		{"BEARER in upper case", map[string]string{"Authorization": "BEARER proxy-key-2"}, 200},
		{"extra spaces", map[string]string{"Authorization": "Bearer   proxy-key-1 "}, 200},
		{"other scheme", map[string]string{"Authorization": "Basic proxy-key-1"}, 401},
		{"scheme alone", map[string]string{"Authorization": "proxy-key-1"}, 401},
		{"key as a prefix", map[string]string{"Authorization": "Bearer proxy-key-12"}, 401},
	}
	for _, tc := range tests {
		h.fake.Reset()
		resp := post(t, h.proxy.URL+"/v1/chat/completions", []byte(chatBody), tc.hdr)
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tc.want {
			t.Errorf("%s: status %d, want %d", tc.name, resp.StatusCode, tc.want)
		}
		if reached := len(h.fake.Received()) > 0; reached != (tc.want == 200) {
			t.Errorf("%s: upstream reached %v", tc.name, reached)
		}
	}
	resp, _ := http.Get(h.proxy.URL + "/healthz")
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("healthz behind auth: %d", resp.StatusCode)
	}
	if logs := h.waitLog(t, "no accepted inbound key"); strings.Contains(logs, "proxy-key") || strings.Contains(logs, "nope") {
		t.Error("a key reached the log")
	}
}

func TestMessageCountLimit(t *testing.T) {
	limited := tokenizer.New(tokenizer.Options{MaxMessages: 3})
	eng := condense.New(condense.Deps{Counter: limited, Models: condense.ModelsFunc(func(string) condense.ModelLimits {
		return condense.ModelLimits{Window: 128000, Threshold: 0.8, Encoding: tokenizer.O200kBase, SafetyFactor: 1}
	})}, condense.Options{})
	h := newHarness(t, nil, func(o *Options) { o.Condenser = eng; o.Codecs.Chat = chat.New(limited) })
	ok := post(t, h.proxy.URL+"/v1/chat/completions", []byte(chatBody), nil)
	ok.Body.Close()
	many := `{"model":"gpt-4o","messages":[{"role":"user","content":"a"},{"role":"assistant","content":"b"},{"role":"user","content":"c"},{"role":"assistant","content":"d"},{"role":"user","content":"e"}]}`
	resp := post(t, h.proxy.URL+"/v1/chat/completions", []byte(many), nil)
	resp.Body.Close()
	if ok.StatusCode != 200 || resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Fatalf("statuses %d and %d, want 200 and 413", ok.StatusCode, resp.StatusCode)
	}
	if n := len(h.fake.Received()); n != 1 {
		t.Errorf("upstream got %d requests, want only the small one", n)
	}
}

// TestUpstreamCannotBeRedirected: no request header moves the upstream.
// seen is what an upstream saw of a request: the Host it was asked, the
// path and the headers.
type seen struct {
	host, path string
	header     http.Header
}

// recordingUpstream answers every request with 200 and records it.
func recordingUpstream(t *testing.T) (*httptest.Server, func() []seen) {
	var mu sync.Mutex
	var got []seen
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		mu.Lock()
		got = append(got, seen{host: r.Host, path: r.URL.EscapedPath(), header: r.Header.Clone()})
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"x","object":"chat.completion","choices":[]}`)
	}))
	t.Cleanup(srv.Close)
	return srv, func() []seen {
		mu.Lock()
		defer mu.Unlock()
		return append([]seen(nil), got...)
	}
}

// rawRequest writes a request line and headers as given (no client
// normalises them) and returns the status.
func rawRequest(t *testing.T, addr, method, target string, hdr map[string]string, body string) int {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s HTTP/1.1\r\n", method, target)
	if _, ok := hdr["Host"]; !ok {
		fmt.Fprintf(&b, "Host: %s\r\n", addr)
	}
	for k, v := range hdr {
		fmt.Fprintf(&b, "%s: %s\r\n", k, v)
	}
	fmt.Fprintf(&b, "Content-Type: application/json\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s", len(body), body)
	if _, err := io.WriteString(c, b.String()); err != nil {
		t.Fatal(err)
	}
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// TestUpstreamCannotBeRedirected tries to send the proxy's request to
// another host through the request line (absolute URI), Host and the
// forwarding headers: every attempt must reach the configured upstream,
// asked for its own host, without the forwarding headers, and the other
// host nothing.
func TestUpstreamCannotBeRedirected(t *testing.T) {
	otherSrv, otherGot := recordingUpstream(t)
	other := strings.TrimPrefix(otherSrv.URL, "http://")
	upSrv, upGot := recordingUpstream(t)
	u, _ := url.Parse(upSrv.URL + "/base")
	p := httptest.NewServer(New(Options{Upstream: u, Condenser: testEngine(), Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}))
	t.Cleanup(p.Close)
	addr := strings.TrimPrefix(p.URL, "http://")
	forwarding := map[string]string{
		"X-Forwarded-Host": other, "X-Forwarded-Proto": "http", "X-Forwarded-Port": "80",
		"Forwarded": "host=" + other + ";proto=http", "X-Original-Url": "/elsewhere", "X-Rewrite-Url": "/elsewhere",
		"X-Forwarded-Server": other, "X-Host": other,
	}
	tests := []struct {
		name, method, target string
		hdr                  map[string]string
		wantPath             string
	}{
		{"Host header", "POST", "/v1/chat/completions", map[string]string{"Host": other}, "/base/v1/chat/completions"},
		{"forwarding headers", "POST", "/v1/chat/completions", forwarding, "/base/v1/chat/completions"},
		{"absolute URI", "POST", "http://" + other + "/v1/chat/completions", map[string]string{"Host": other}, "/base/v1/chat/completions"},
		{"absolute URI, pass-through", "GET", "http://" + other + "/v1/models", nil, "/base/v1/models"},
		{"absolute URI with userinfo", "GET", "http://user@" + other + "/v1/models", forwarding, "/base/v1/models"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := len(upGot())
			body := ""
			if tc.method == "POST" {
				body = chatBody
			}
			if code := rawRequest(t, addr, tc.method, tc.target, tc.hdr, body); code != 200 {
				t.Fatalf("status %d", code)
			}
			got := upGot()
			if len(got) != before+1 {
				t.Fatalf("configured upstream got %d requests, want 1", len(got)-before)
			}
			last := got[len(got)-1]
			if last.host != u.Host || last.path != tc.wantPath {
				t.Errorf("upstream asked for host %q path %q, want %q %q", last.host, last.path, u.Host, tc.wantPath)
			}
			for _, k := range []string{"X-Forwarded-Host", "Forwarded", "X-Original-Url", "X-Rewrite-Url"} {
				if v := last.header.Get(k); v != "" {
					t.Errorf("upstream got %s: %q", k, v)
				}
			}
			if n := len(otherGot()); n != 0 {
				t.Fatalf("the other host got %d requests", n)
			}
		})
	}
}

// TestPathCannotEscapeUpstreamBase: with an upstream base URL that has a
// path, no request path — dots literal, percent-encoded, behind encoded
// slashes or backslashes, encoded twice — reaches the upstream outside
// that path; ordinary paths, encoded slashes included, still pass.
func TestPathCannotEscapeUpstreamBase(t *testing.T) {
	upSrv, upGot := recordingUpstream(t)
	u, _ := url.Parse(upSrv.URL + "/litellm/")
	p := httptest.NewServer(New(Options{Upstream: u, Condenser: testEngine(), Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}))
	t.Cleanup(p.Close)
	addr := strings.TrimPrefix(p.URL, "http://")
	for _, target := range []string{
		"/v1/../../admin",
		"/../admin",
		"/v1/chat/completions/../../../admin",
		"/v1/%2e%2e/%2e%2e/admin",
		"/v1/%2E%2E/%2e./admin",
		"/v1%2f..%2f..%2fadmin",
		"/v1%2F%2e%2e%2F%2e%2e%2Fadmin",
		"/v1/..%5c..%5cadmin",
		"/v1\\..\\..\\admin",
		"/v1/%252e%252e/%252e%252e/admin",
		"/v1/./chat/completions",
	} {
		for _, method := range []string{"POST", "GET"} {
			body := ""
			if method == "POST" {
				body = chatBody
			}
			if code := rawRequest(t, addr, method, target, nil, body); code != http.StatusBadRequest {
				t.Errorf("%s %s: status %d, want 400", method, target, code)
			}
		}
	}
	for _, s := range upGot() {
		t.Errorf("upstream reached at %s", s.path)
	}
	for target, want := range map[string]string{
		"/v1/chat/completions":              "/litellm/v1/chat/completions",
		"/v1/models/openai%2Fgpt-4o":        "/litellm/v1/models/openai%2Fgpt-4o",
		"/v1/files/a..b":                    "/litellm/v1/files/a..b",
		"/v1/models/gemini-2.5:countTokens": "/litellm/v1/models/gemini-2.5:countTokens",
	} {
		before := len(upGot())
		if code := rawRequest(t, addr, "POST", target, nil, chatBody); code != 200 {
			t.Errorf("%s: status %d", target, code)
			continue
		}
		if got := upGot(); len(got) != before+1 || got[len(got)-1].path != want {
			t.Errorf("%s reached the upstream as %v, want %s", target, got[before:], want)
		}
	}
}

// TestPrefixReuseMetrics: an agent resending its history with one more
// message reuses all of the previous request as prefix; /metrics and the
// log line say so, per mode applied.
func TestPrefixReuseMetrics(t *testing.T) {
	h := newHarness(t, nil)
	first := `{"model":"gpt-4o","messages":[{"role":"system","content":"Be brief."},{"role":"user","content":"hello there, how are you"}]}`
	second := `{"model":"gpt-4o","messages":[{"role":"system","content":"Be brief."},{"role":"user","content":"hello there, how are you"},{"role":"assistant","content":"fine"},{"role":"user","content":"good"}]}`
	var before int
	for i, body := range []string{first, second} {
		resp := post(t, h.proxy.URL+"/v1/chat/completions", []byte(body), nil)
		resp.Body.Close()
		if i == 0 {
			before, _ = strconv.Atoi(resp.Header.Get(HeaderTokensAfter))
		}
	}
	if before == 0 {
		t.Fatal("no token count on the first request")
	}
	h.waitLog(t, `"prefix_reused":-1`) // each line is written when its handler returns, in any order
	logs := h.waitLog(t, fmt.Sprintf(`"prefix_reused":%d`, before))
	if !strings.Contains(logs, fmt.Sprintf(`"prefix_reused":%d`, before)) || !strings.Contains(logs, `"prefix_reused":-1`) {
		t.Errorf("log lines do not report the reused prefix (%d, then -1 for the first):\n%s", before, logs)
	}
	resp, err := http.Get(h.proxy.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	metrics, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	want := fmt.Sprintf(`condense_prefix_reused_tokens_total{mode="none"} %d`, before)
	if !strings.Contains(string(metrics), want) || !strings.Contains(string(metrics), `condense_forwarded_tokens_total{mode="none"}`) {
		t.Errorf("metrics lack %q:\n%s", want, metrics)
	}
}

// TestModeHeaderAcceptsEveryMode: X-Condense-Mode takes exactly
// condense.Modes, in any case; anything else gets the default.
func TestModeHeaderAcceptsEveryMode(t *testing.T) {
	var mu sync.Mutex
	var got []string
	rec := condenserFunc(func(_ context.Context, req condense.Request) (condense.Result, error) {
		mu.Lock()
		got = append(got, req.Mode)
		mu.Unlock()
		return condense.Result{Body: req.Body}, nil
	})
	h := newHarness(t, nil, func(o *Options) { o.Condenser = rec; o.DefaultMode = condense.ModeOff })
	for _, m := range append(slices.Clone(condense.Modes), "fast") {
		resp := post(t, h.proxy.URL+"/v1/chat/completions", []byte(chatBody), map[string]string{HeaderMode: strings.ToUpper(m)})
		resp.Body.Close()
	}
	want := append(slices.Clone(condense.Modes), condense.ModeOff)
	mu.Lock()
	defer mu.Unlock()
	if !slices.Equal(got, want) {
		t.Errorf("modes seen %v, want %v", got, want)
	}
}

// condenserFunc adapts a function to Condenser.
type condenserFunc func(context.Context, condense.Request) (condense.Result, error)

func (f condenserFunc) Condense(ctx context.Context, req condense.Request) (condense.Result, error) {
	return f(ctx, req)
}

// TestErrorShapeByRoute: an error the proxy answers itself — here a
// refused key, before any handler runs — takes the shape of the route's
// API, as its codec writes it: Anthropic's on the Messages routes and
// their batches, OpenAI's on chat completions, Responses and elsewhere.
func TestErrorShapeByRoute(t *testing.T) {
	h := newHarness(t, nil, func(o *Options) { o.AuthKeys = []string{"k"} })
	for _, tc := range []struct {
		method, path string
		anthropic    bool
	}{
		{"POST", "/v1/messages", true},
		{"POST", "/messages", true},
		{"POST", "/v1/messages/count_tokens", true},
		{"GET", "/v1/messages/batches/msgbatch_1", true},
		{"POST", "/v1/messages/batches", true},
		{"GET", "/v1/messages", true}, // another method than the route's
		{"POST", "/v1/chat/completions", false},
		{"POST", "/v1/responses", false},
		{"GET", "/v1/models", false},
	} {
		req, _ := http.NewRequest(tc.method, h.proxy.URL+tc.path, strings.NewReader(`{}`))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var v struct {
			Type  string
			Error struct{ Type, Message string }
		}
		err = json.NewDecoder(resp.Body).Decode(&v)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("%s %s: status %d, %v", tc.method, tc.path, resp.StatusCode, err)
		}
		if got := v.Type == "error" && v.Error.Type == "authentication_error"; got != tc.anthropic {
			t.Errorf("%s %s: Anthropic's shape %v, want %v (%+v)", tc.method, tc.path, got, tc.anthropic, v)
		}
		if !tc.anthropic && (v.Type != "" || v.Error.Type != "invalid_request_error" || v.Error.Message == "") {
			t.Errorf("%s %s: not OpenAI's shape: %+v", tc.method, tc.path, v)
		}
	}
}
