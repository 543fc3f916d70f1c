package proxy

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"
)

// keepAliveRecorder is a KeepAlive that records what it is told.
type keepAliveRecorder struct {
	mu   sync.Mutex
	reqs []KeepAliveRequest
	obs  []*observerRecorder
}

func (k *keepAliveRecorder) Forwarded(_ context.Context, r KeepAliveRequest) AnswerObserver {
	k.mu.Lock()
	defer k.mu.Unlock()
	o := &observerRecorder{ended: make(chan struct{})}
	k.reqs, k.obs = append(k.reqs, r), append(k.obs, o)
	return o
}

func (k *keepAliveRecorder) seen() ([]KeepAliveRequest, []*observerRecorder) {
	k.mu.Lock()
	defer k.mu.Unlock()
	return append([]KeepAliveRequest(nil), k.reqs...), append([]*observerRecorder(nil), k.obs...)
}

type observerRecorder struct {
	mu       sync.Mutex
	status   int
	body     bytes.Buffer
	ends     int
	complete bool
	ended    chan struct{}
}

func (o *observerRecorder) Start(status int, _ http.Header) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.status = status
	return true
}

func (o *observerRecorder) Write(b []byte) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.body.Write(b)
}

func (o *observerRecorder) End(complete bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.ends++
	if o.ends == 1 {
		o.complete = complete
		close(o.ended)
	}
}

func (o *observerRecorder) text() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.body.String()
}

// wait waits for End (the handler calls it as the answer finishes, which
// may be after the client has read it).
func (o *observerRecorder) wait(t *testing.T) (status int, complete bool, ends int) {
	t.Helper()
	select {
	case <-o.ended:
	case <-time.After(10 * time.Second):
		t.Fatal("the answer's observer never ended")
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.status, o.complete, o.ends
}

const streamBody = `{"model":"gpt-4o","stream":true,"messages":[{"role":"user","content":"hi"}]}`

// TestKeepAliveSeesTheForwardedRequest: what the KeepAlive is told is the
// request as the upstream got it: the body, path, query, the caller's
// headers without the proxy's own; the caller's scope and conversation.
func TestKeepAliveSeesTheForwardedRequest(t *testing.T) {
	up := &anthropicUpstream{}
	ka := &keepAliveRecorder{}
	h := newHarness(t, up, func(o *Options) { o.KeepAlive = ka })
	resp := post(t, h.proxy.URL+"/v1/messages?beta=true", messagesBody(3), map[string]string{
		"x-api-key": "sk-ant-1", "anthropic-version": "2023-06-01", HeaderMode: "off", "X-Forwarded-For": "10.0.0.1"})
	client, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	reqs, obs := ka.seen()
	if len(reqs) != 1 {
		t.Fatalf("told of %d requests", len(reqs))
	}
	r, got := reqs[0], up.received()[0]
	if !bytes.Equal(r.Body, got.body) || r.Path != "/v1/messages" || r.RawQuery != "beta=true" {
		t.Errorf("told %s?%s, %d bytes; upstream got %s?%s, %d bytes", r.Path, r.RawQuery, len(r.Body), got.path, got.query, len(got.body))
	}
	if r.Format != "messages" || r.Model != "claude-sonnet-4-5" || r.Conversation == "" || r.Scope == "" || r.Tokens <= 0 {
		t.Errorf("told %+v", r)
	}
	if r.Header.Get("X-Api-Key") != "sk-ant-1" || r.Header.Get("Anthropic-Version") != "2023-06-01" ||
		r.Header.Get(HeaderMode) != "" || r.Header.Get("X-Forwarded-For") != "" || r.Header.Get("Content-Length") != "" {
		t.Errorf("headers %v", r.Header)
	}
	status, complete, _ := obs[0].wait(t)
	if status != 200 || !complete || obs[0].text() != string(client) {
		t.Errorf("observer: status %d complete %v, saw %q; the client got %q", status, complete, obs[0].text(), client)
	}
}

// TestKeepAliveObservesWithoutHoldingBack: a stream reaches the observer
// and the client chunk by chunk; the observer ends once, complete only
// when the stream was read to its end.
func TestKeepAliveObservesWithoutHoldingBack(t *testing.T) {
	cases := []struct {
		name     string
		failMid  bool
		leave    bool
		complete bool
	}{
		{"stream read to its end", false, false, true},
		{"upstream fails mid-stream", true, false, false},
		{"client leaves mid-stream", false, true, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			up := &slowStream{release: make(chan struct{}), canceled: make(chan struct{}), failMid: tc.failMid}
			ka := &keepAliveRecorder{}
			h := newHarness(t, up, func(o *Options) { o.KeepAlive = ka })
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			req, _ := http.NewRequestWithContext(ctx, "POST", h.proxy.URL+"/v1/chat/completions", strings.NewReader(streamBody))
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			br := bufio.NewReader(resp.Body)
			line, err := br.ReadString('\n')
			if err != nil || !strings.Contains(line, "first") {
				t.Fatalf("first chunk not delivered before the upstream finished: %q %v", line, err)
			}
			_, obs := ka.seen()
			if len(obs) != 1 || !strings.Contains(obs[0].text(), "first") {
				t.Fatal("the observer had not seen the chunk the client has")
			}
			if tc.leave {
				cancel()
			} else {
				close(up.release)
				io.ReadAll(br)
			}
			_, complete, _ := obs[0].wait(t)
			if complete != tc.complete {
				t.Errorf("complete %v, want %v", complete, tc.complete)
			}
			if tc.complete && !strings.Contains(obs[0].text(), "[DONE]") {
				t.Errorf("observer saw %q", obs[0].text())
			}
			h.waitLog(t, `"status"`)
			if _, _, ends := obs[0].wait(t); ends != 1 {
				t.Errorf("End called %d times", ends)
			}
		})
	}
}

// TestKeepAliveNotTold: count_tokens and passthrough requests are not
// told; an upstream that cannot be reached ends the observer incomplete.
func TestKeepAliveNotTold(t *testing.T) {
	up := &anthropicUpstream{}
	ka := &keepAliveRecorder{}
	h := newHarness(t, up, func(o *Options) { o.KeepAlive = ka })
	for _, path := range []string{"/v1/messages/count_tokens", "/v1/models"} {
		resp := post(t, h.proxy.URL+path, messagesBody(3), map[string]string{"x-api-key": "sk-ant-1"})
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	if reqs, _ := ka.seen(); len(reqs) != 0 {
		t.Errorf("told of %d requests", len(reqs))
	}

	down, _ := url.Parse("http://127.0.0.1:1")
	ka = &keepAliveRecorder{}
	p := httptest.NewServer(New(Options{Upstream: down, Condenser: testEngine(), KeepAlive: ka, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}))
	defer p.Close()
	resp := post(t, p.URL+"/v1/chat/completions", []byte(streamBody), nil)
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	_, obs := ka.seen()
	if len(obs) != 1 {
		t.Fatalf("told of %d requests", len(obs))
	}
	if _, complete, _ := obs[0].wait(t); complete {
		t.Error("no answer, yet complete")
	}
}
