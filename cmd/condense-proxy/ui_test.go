package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/condense-proxy/condense-proxy/internal/fakeupstream"
)

// startServe runs serve with args in front of a fake upstream until the
// test ends; it returns the proxy's base URL, the fake and a stop func
// that waits for serve to return.
func startServe(t *testing.T, args ...string) (string, *fakeupstream.Server, func() error) {
	t.Helper()
	return startServeEnv(t, nil, args...)
}

// forwarded is what the upstream received but serve's own read of
// /model/info at start (litellm.model_info).
func forwarded(rs []fakeupstream.Received) []fakeupstream.Received {
	var out []fakeupstream.Received
	for _, r := range rs {
		if r.Path != "/model/info" {
			out = append(out, r)
		}
	}
	return out
}

// startServeEnv is startServe with environment entries ("KEY=value").
func startServeEnv(t *testing.T, environ []string, args ...string) (string, *fakeupstream.Server, func() error) {
	t.Helper()
	return startServeWith(t, environ, io.Discard, args...)
}

// startServeLogs is startServe with the logs written to logs.
func startServeLogs(t *testing.T, logs io.Writer, args ...string) (string, *fakeupstream.Server, func() error) {
	t.Helper()
	return startServeWith(t, nil, logs, args...)
}

func startServeWith(t *testing.T, environ []string, logs io.Writer, args ...string) (string, *fakeupstream.Server, func() error) {
	t.Helper()
	fake := fakeupstream.New()
	up := httptest.NewServer(fake)
	t.Cleanup(up.Close)
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		done <- serve(ctx, append([]string{"--listen", "127.0.0.1:0", "--upstream", up.URL, "--summarizer", "extractive"}, args...),
			io.Discard, logs, environ, ready)
	}()
	var addr string
	select {
	case addr = <-ready:
	case err := <-done:
		t.Fatalf("serve: %v", err)
	}
	stopped := false
	stop := func() error {
		if stopped {
			return nil
		}
		stopped = true
		cancel()
		select {
		case err := <-done:
			return err
		case <-time.After(10 * time.Second):
			t.Fatal("serve did not return")
			return nil
		}
	}
	t.Cleanup(func() { stop() })
	return "http://" + addr, fake, stop
}

func get(t *testing.T, url, key string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp.StatusCode, string(b)
}

func postChat(t *testing.T, base, key string) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, base+"/v1/chat/completions",
		strings.NewReader(`{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}]}`))
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// requestsSeen polls the page's overview until it counts want requests.
func requestsSeen(t *testing.T, base, key string, want int64) {
	t.Helper()
	var ov struct {
		Totals struct {
			Requests int64 `json:"requests"`
		} `json:"totals"`
	}
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		code, body := get(t, base+"/ui/api/overview", key)
		if code != 200 {
			t.Fatalf("overview: %d %s", code, body)
		}
		json.Unmarshal([]byte(body), &ov)
		if ov.Totals.Requests == want || time.Now().After(deadline) {
			break
		}
	}
	if ov.Totals.Requests != want {
		t.Fatalf("the page counts %d requests, want %d", ov.Totals.Requests, want)
	}
}

func TestServeUI(t *testing.T) {
	// A grace of an hour: were the open event stream to hold shutdown,
	// stop would wait for it (and fail after its own bound) — no clock
	// is read here.
	base, _, stop := startServe(t, "--shutdown-grace", "1h")
	if code, body := get(t, base+"/ui", ""); code != 200 || !strings.Contains(body, "condense-proxy") {
		t.Fatalf("/ui: %d", code)
	}
	if code := postChat(t, base, "sk-agent"); code != 200 {
		t.Fatalf("chat: %d", code)
	}
	requestsSeen(t, base, "", 1)

	// An open event stream does not hold shutdown.
	resp, err := http.Get(base + "/ui/api/events")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if _, err := bufio.NewReader(resp.Body).ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	if err := stop(); err != nil {
		t.Fatalf("serve: %v", err)
	}
}

func TestServeUIDisabledKeepsNothing(t *testing.T) {
	base, fake, _ := startServe(t, "--ui=false")
	if code := postChat(t, base, "sk-agent"); code != 200 {
		t.Fatalf("chat: %d", code)
	}
	// /ui is an ordinary path: the upstream answers it.
	code, body := get(t, base+"/ui/api/overview", "")
	if code != 200 || strings.Contains(body, "totals") || !strings.Contains(body, `"path":"/ui/api/overview"`) {
		t.Errorf("/ui/api/overview with the page off: %d %s", code, body)
	}
	if n := len(forwarded(fake.Received())); n != 2 {
		t.Errorf("upstream got %d requests, want the chat and /ui", n)
	}
}

func TestServeUIKeys(t *testing.T) {
	base, _, _ := startServe(t, "--auth-keys", "agent-key", "--ui-keys", "admin-key")
	if code := postChat(t, base, ""); code != 401 {
		t.Errorf("chat without a key: %d, want 401 (auth.keys)", code)
	}
	if code := postChat(t, base, "agent-key"); code != 200 {
		t.Fatalf("chat: %d", code)
	}
	if code, _ := get(t, base+"/ui/api/overview", ""); code != 401 {
		t.Errorf("overview without a key: %d, want 401", code)
	}
	if code, body := get(t, base+"/ui", ""); code != 401 || !strings.Contains(body, "needs a key") {
		t.Errorf("page without a key: %d", code)
	}
	requestsSeen(t, base, "admin-key", 1)
	var list struct {
		Access        string            `json:"access"`
		Conversations []json.RawMessage `json:"conversations"`
	}
	_, body := get(t, base+"/ui/api/conversations", "agent-key")
	json.Unmarshal([]byte(body), &list)
	if list.Access != "caller" || len(list.Conversations) != 1 {
		t.Errorf("the agent's key: access %q, %d conversations", list.Access, len(list.Conversations))
	}
}
