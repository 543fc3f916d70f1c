package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
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
// that key (and nothing to a visitor without it); its summaries are the
// scripted model's, asked by the default (LLM) summarizer, and the
// page's originals open with its key; it prints the commands that point
// Claude Code and Codex at it and keeps serving until its context ends.
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
			finished = strings.HasPrefix(l, "  Others:")
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
	for _, want := range []string{"ANTHROPIC_BASE_URL=" + base + " ", `base_url="` + base + `/v1"`, `wire_api="responses"`} {
		if !strings.Contains(text, want) {
			t.Errorf("the agents' commands (%s) not printed:\n%s", want, text)
		}
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
			ID        string `json:"id"`
			Content   bool   `json:"content"`
			Requests  int    `json:"requests"`
			Condensed int    `json:"condensed"`
		} `json:"conversations"`
	}
	if err := json.Unmarshal([]byte(body), &list); code != 200 || err != nil || len(list.Conversations) != 1 {
		t.Fatalf("conversations with the key: %d %v %s", code, err, body)
	}
	if c := list.Conversations[0]; !c.Content || c.Condensed < 3 || c.Requests < 10 {
		t.Errorf("the page shows %+v", c)
	}
	demoSummariesAndOriginals(t, base, key, list.Conversations[0].ID, list.Conversations[0].Requests)

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

// demoSummariesAndOriginals checks the demo's condensed requests on its
// page: some summaries were written by the scripted model (the sections
// of the summarizer prompt, through summarizer calls, not the extractive
// fallback) and every change's originals open with the page's key.
func demoSummariesAndOriginals(t *testing.T, base, key, conv string, requests int) {
	t.Helper()
	var calls, llmSummaries, originals int
	for n := 1; n <= requests; n++ {
		code, body := get(t, fmt.Sprintf("%s/ui/api/conversations/%s/requests/%d", base, conv, n), key)
		if code != http.StatusOK {
			continue // no longer kept
		}
		var detail struct {
			Request struct {
				SummarizerCalls int    `json:"summarizer_calls"`
				Degraded        bool   `json:"degraded"`
				DegradedReason  string `json:"degraded_reason"`
				Changes         []struct {
					Kind      string `json:"kind"`
					Text      string `json:"text"`
					Originals string `json:"originals"`
				} `json:"changes"`
			} `json:"request"`
		}
		if err := json.Unmarshal([]byte(body), &detail); err != nil {
			t.Fatalf("request %d: %v %s", n, err, body)
		}
		d := detail.Request
		if d.Degraded {
			t.Errorf("request %d degraded: %s", n, d.DegradedReason)
		}
		calls += d.SummarizerCalls
		for _, c := range d.Changes {
			if strings.Contains(c.Text, "## Task and intent") && strings.Contains(c.Text, "scripted model") {
				llmSummaries++
			}
			if c.Originals == "" {
				continue
			}
			code, body := get(t, base+c.Originals, key)
			if code != http.StatusOK || !strings.Contains(body, `"messages":[`) {
				t.Errorf("request %d: %s with the page's key: %d %s", n, c.Originals, code, body)
			}
			originals++
		}
	}
	if calls == 0 || llmSummaries == 0 || originals == 0 {
		t.Errorf("%d summarizer calls, %d summaries by the scripted model, %d originals opened", calls, llmSummaries, originals)
	}
}
