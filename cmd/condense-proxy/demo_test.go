package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/condense-proxy/condense-proxy/internal/corpus"
)

// The demo's sample session: corpus.Synthetic's, at these.
const (
	demoSeed  = 17
	demoChars = 90_000
)

// TestDemoSessionIsSynthetic: the shipped sample is generated, never a
// recorded session; -update writes it.
func TestDemoSessionIsSynthetic(t *testing.T) {
	sess, _ := corpus.Synthetic(demoSeed, demoChars)
	want, err := sess.Request("gpt-4o", 0)
	if err != nil {
		t.Fatal(err)
	}
	if *update {
		if err := os.WriteFile("testdata/demo-session.json", want, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if !bytes.Equal(demoSession, want) {
		t.Fatal("testdata/demo-session.json is not corpus.Synthetic's session (go test -run TestDemoSessionIsSynthetic -update)")
	}
}

// pipeLines is an io.Writer handing complete lines to a channel.
type pipeLines struct {
	buf   bytes.Buffer
	lines chan string
}

func (p *pipeLines) Write(b []byte) (int, error) {
	p.buf.Write(b)
	for {
		line, err := p.buf.ReadString('\n')
		if err != nil {
			p.buf.WriteString(line)
			return len(b), nil
		}
		p.lines <- strings.TrimRight(line, "\n")
	}
}

// TestDemo: the demo replays the sample through a proxy built by
// internal/app, condenses some of its requests, prints the live page and
// its key, and the page shows the conversation, content included, to
// that key (and nothing to a visitor without it); it keeps serving until
// its context ends.
func TestDemo(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out := &pipeLines{lines: make(chan string, 1000)}
	ready := make(chan [2]string, 1)
	done := make(chan error, 1)
	go func() {
		done <- demo(ctx, []string{"--listen", "127.0.0.1:0", "--pause", "0s"}, out, io.Discard, ready)
	}()
	var base, key string
	select {
	case r := <-ready:
		base, key = r[0], r[1]
	case err := <-done:
		t.Fatalf("demo: %v", err)
	}
	var printed []string
	condensed := 0
	for finished := false; !finished; {
		select {
		case l := <-out.lines:
			printed = append(printed, l)
			if strings.Contains(l, "condensed (") {
				condensed++
			}
			finished = strings.HasPrefix(l, "Still serving until Ctrl-C")
		case err := <-done:
			t.Fatalf("demo returned %v before the replay ended:\n%s", err, strings.Join(printed, "\n"))
		case <-time.After(2 * time.Minute):
			t.Fatalf("the replay did not end:\n%s", strings.Join(printed, "\n"))
		}
	}
	text := strings.Join(printed, "\n")
	if !strings.Contains(text, base+"/ui") || !strings.Contains(text, key) {
		t.Errorf("the live page or its key not printed:\n%s", text)
	}
	if condensed < 3 {
		t.Errorf("%d requests condensed:\n%s", condensed, text)
	}

	code, body := get(t, base+"/ui/api/conversations", "")
	if code != http.StatusUnauthorized {
		t.Errorf("the page without the key: %d %s", code, body)
	}
	code, body = get(t, base+"/ui/api/conversations", key)
	var list struct {
		Conversations []struct {
			Content   bool `json:"content"`
			Requests  int  `json:"requests"`
			Condensed int  `json:"condensed"`
		} `json:"conversations"`
	}
	if err := json.Unmarshal([]byte(body), &list); code != 200 || err != nil || len(list.Conversations) != 1 {
		t.Fatalf("conversations with the key: %d %v %s", code, err, body)
	}
	if c := list.Conversations[0]; !c.Content || c.Condensed < 3 || c.Requests < 10 {
		t.Errorf("the page shows %+v", c)
	}
	// The page itself answers (its document).
	if code, _ := get(t, base+"/ui", key); code != 200 {
		t.Errorf("/ui: %d", code)
	}

	// Still serving: a request of the user's own goes through.
	resp, err := http.Post(base+"/v1/chat/completions", "application/json", strings.NewReader(`{"model":"any","messages":[{"role":"user","content":"hi"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("a request after the replay: %d", resp.StatusCode)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("demo returned %v", err)
	}
}
