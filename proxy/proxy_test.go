package proxy

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"compress/zlib"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

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
// the handler returns, which may be after the client has its answer).
func (h *harness) waitLog(t *testing.T, want string) string {
	t.Helper()
	deadline := time.Now().Add(2 * time.Second)
	for {
		logs := h.logs.String()
		if strings.Contains(logs, want) || time.Now().After(deadline) {
			return logs
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
		resp, err := http.Get(h.proxy.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.Contains(string(body), want) {
			t.Errorf("%s: %d %s", path, resp.StatusCode, body)
		}
	}
	if got := h.fake.Received(); len(got) != 1 {
		t.Errorf("health endpoints reached the upstream: %d requests", len(got))
	}
}

type downCache struct{}

func (downCache) Ping(context.Context) error { return io.ErrClosedPipe }

func TestReadyzCache(t *testing.T) {
	h := newHarness(t, nil, func(o *Options) { o.Cache = downCache{} })
	resp, _ := http.Get(h.proxy.URL + "/readyz")
	resp.Body.Close()
	if resp.StatusCode != 503 {
		t.Errorf("unreachable cache: readyz %d, want 503", resp.StatusCode)
	}
	h2 := newHarness(t, nil, func(o *Options) { o.Cache = downCache{}; o.CacheDegraded = func() bool { return true } })
	resp, _ = http.Get(h2.proxy.URL + "/readyz")
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(body), "degraded") {
		t.Errorf("degraded cache: readyz %d %s", resp.StatusCode, body)
	}
}

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

func TestScopeHashesCredentials(t *testing.T) {
	a := http.Header{"Authorization": {"Bearer sk-a"}}
	b := http.Header{"Authorization": {"Bearer sk-b"}}
	if Scope(a) == Scope(b) {
		t.Fatal("different keys share a scope")
	}
	if Scope(a) != Scope(a.Clone()) {
		t.Fatal("scope not stable")
	}
	if strings.Contains(Scope(a), "sk-a") {
		t.Fatal("scope contains the key")
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
	eng := condense.New(condense.Deps{Counter: tokenizer.New(tokenizer.Options{MaxMessages: 3}), Models: condense.ModelsFunc(func(string) condense.ModelLimits {
		return condense.ModelLimits{Window: 128000, Threshold: 0.8, Encoding: tokenizer.O200kBase, SafetyFactor: 1}
	})}, condense.Options{})
	h := newHarness(t, nil, func(o *Options) { o.Condenser = eng })
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
func TestUpstreamCannotBeRedirected(t *testing.T) {
	other := fakeupstream.New()
	otherSrv := httptest.NewServer(other)
	defer otherSrv.Close()
	h := newHarness(t, nil)
	u, _ := url.Parse(otherSrv.URL)
	req, _ := http.NewRequest("POST", h.proxy.URL+"/v1/chat/completions", strings.NewReader(chatBody))
	req.Host = u.Host
	for _, k := range []string{"X-Forwarded-Host", "X-Original-URL", "X-Rewrite-URL", "Forwarded"} {
		req.Header.Set(k, otherSrv.URL)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if len(h.fake.Received()) != 1 || len(other.Received()) != 0 {
		t.Fatalf("configured upstream got %d, the header's target %d", len(h.fake.Received()), len(other.Received()))
	}
}
