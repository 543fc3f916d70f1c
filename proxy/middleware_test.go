package proxy

import (
	"bufio"
	"context"
	"net/http"
	"strings"
	"testing"
)

// TestClientLeavingMidStreamIs499: a client that leaves while the answer
// streams is logged as the client leaving (499, info), not as an upstream
// failure.
func TestClientLeavingMidStreamIs499(t *testing.T) {
	up := &slowStream{release: make(chan struct{}), canceled: make(chan struct{})}
	h := newHarness(t, up)
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "POST", h.proxy.URL+"/v1/chat/completions",
		strings.NewReader(`{"model":"gpt-4o","stream":true,"messages":[{"role":"user","content":"hi"}]}`))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bufio.NewReader(resp.Body).ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	cancel()
	resp.Body.Close()
	line := h.logLine(t, `"route":"chat"`)
	if !strings.Contains(line, `"status":499`) || !strings.Contains(line, "client left") ||
		strings.Contains(line, "upstream failed") || !strings.Contains(line, `"level":"INFO"`) {
		t.Fatalf("log line %s", line)
	}
}

// TestOneLevelPerLine: the request log line carries one level key.
func TestOneLevelPerLine(t *testing.T) {
	h := newHarness(t, nil)
	resp := post(t, h.proxy.URL+"/v1/chat/completions", []byte(chatBody), nil)
	resp.Body.Close()
	line := h.logLine(t, `"route":"chat"`)
	if n := strings.Count(line, `"level":`); n != 1 {
		t.Fatalf("%d level keys: %s", n, line)
	}
}
