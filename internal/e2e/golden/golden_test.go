// Package golden_test pins what the proxy forwards: a few sessions of the
// shared corpus are replayed turn by turn in every wire format (chat
// completions, Anthropic Messages, OpenAI Responses) and mode (off, full
// with the extractive summarizer, selective, auto), and every body the
// upstream received is compared with testdata/forwarded.txt: its hash,
// and, for a reviewer, its items and new texts (internal/goldenview).
// A change of the engine that changes a forwarded byte fails here, request
// by request; an intended one is recorded by refreshing the file
//
//	go test ./internal/e2e/golden/ -run TestForwardedBodies -update
//
// and saying in the commit why those requests changed.
package golden_test

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/condense-proxy/condense-proxy/codec/chat"
	"github.com/condense-proxy/condense-proxy/codec/messages"
	"github.com/condense-proxy/condense-proxy/codec/responses"
	"github.com/condense-proxy/condense-proxy/internal/corpus"
	"github.com/condense-proxy/condense-proxy/internal/fakeupstream"
	"github.com/condense-proxy/condense-proxy/internal/goldenview"
	"github.com/condense-proxy/condense-proxy/internal/harness"
	"github.com/condense-proxy/condense-proxy/internal/testenv"
	"github.com/condense-proxy/condense-proxy/tokenizer"
	"github.com/condense-proxy/condense-proxy/view"
)

var update = flag.Bool("update", false, "rewrite testdata/forwarded.txt from what the proxy forwards now")

const goldenFile = "testdata/forwarded.txt"

// goldenHeaderText opens the golden file.
const goldenHeaderText = `What the proxy forwards of corpus replays (TestForwardedBodies, internal/e2e/golden).
A line: format/mode/session/turn: X-Condense-Applied | hash of the body | its items.
Format: docs/testing.md, Goldens. Rewritten by go test ./internal/e2e/golden/ -run TestForwardedBodies -update`

// codecs read the forwarded bodies, by format, for the golden file (their
// own counter: the proxy's count cache stays the proxy's).
var codecs = func() map[string]view.Codec {
	c := tokenizer.New(tokenizer.Options{})
	return map[string]view.Codec{"chat": chat.New(c), "messages": messages.New(c), "responses": responses.New(c)}
}()

// window is small enough that the sessions below condense on most turns.
const window = 8000

// every samples the turns (the last turn is always sent): each request is
// the whole history, so the replays stay within seconds under -race.
const every = 3

// sessions are the corpus files replayed (small ones, of each recorder);
// the .jsonl ones are also replayed in their native Messages form.
var sessions = []string{
	"claude-code/2cba43de-c8d2-4a69-add8-9fae3ad93900.jsonl",
	"claude-code/e80aa543-6eff-4cb5-91e0-6d4e8e7951e9.jsonl",
	"swe-agent/legacy_gpt4__pydicom__pydicom-1458.traj",
	"mini-swe-agent/deepseek_chat_test_1-100__django__django-13658.traj.json",
}

var modes = []string{"off", "full", "selective", "auto"}

// corpusDir returns the shared corpus's folder; it skips the test when
// the folder is absent, or fails it in CI.
func corpusDir(t *testing.T) string {
	t.Helper()
	dir := filepath.Join("..", "..", "..", "..", "shared", "corpus", "raw")
	if _, err := os.Stat(dir); err != nil {
		if testenv.InCI() {
			t.Fatalf("in CI and the shared corpus is absent: %v", err)
		}
		t.Skip("shared corpus absent")
	}
	return dir
}

// replayed is one session in one wire format: its path on the proxy and
// its requests, oldest first.
type replayed struct {
	name, format, path string
	turns              int
	request            func(k int) ([]byte, error)
}

func load(t *testing.T, dir string) []replayed {
	var out []replayed
	for _, rel := range sessions {
		f := filepath.Join(dir, rel)
		name := strings.TrimSuffix(filepath.Base(rel), filepath.Ext(rel))
		s, err := corpus.Load(f)
		if err != nil {
			t.Fatalf("%s: %v", rel, err)
		}
		ends := s.TurnEnds()
		out = append(out, replayed{name: name, format: "chat", path: "/v1/chat/completions", turns: len(ends),
			request: func(k int) ([]byte, error) { return s.Request("gpt-4o", ends[k]) }})
		if strings.HasSuffix(rel, ".jsonl") {
			m, err := corpus.LoadMessages(f)
			if err != nil {
				t.Fatalf("%s: %v", rel, err)
			}
			out = append(out, replayed{name: name, format: "messages", path: "/v1/messages?beta=true", turns: m.Turns(), request: m.Request})
		}
		r := corpus.Responses(s)
		out = append(out, replayed{name: name, format: "responses", path: "/v1/responses", turns: r.Turns(), request: r.Request})
	}
	return out
}

// goldenHeader names the request a forwarded body belongs to.
const goldenHeader = "X-Golden-Request"

// recorder keeps every body forwarded with goldenHeader (summarizer calls
// carry none), then hands the request to next.
type recorder struct {
	next   http.Handler
	mu     sync.Mutex
	bodies map[string][]byte
	twice  map[string]bool
}

func (rc *recorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if id := r.Header.Get(goldenHeader); id != "" {
		body, _ := io.ReadAll(r.Body)
		rc.mu.Lock()
		if _, dup := rc.bodies[id]; dup {
			rc.twice[id] = true
		}
		rc.bodies[id] = body
		rc.mu.Unlock()
		r.Body = io.NopCloser(bytes.NewReader(body))
	}
	rc.next.ServeHTTP(w, r)
}

// TestForwardedBodies replays the sessions in every format and mode, one
// fresh proxy per replay, each request after the background work of the
// one before has finished (so what is cached when a request arrives does
// not depend on timing), and compares each forwarded body (its hash, its
// items, its new texts) and X-Condense-Applied with the golden file.
func TestForwardedBodies(t *testing.T) {
	dir := corpusDir(t)
	book := goldenview.NewBook()
	got := map[string]string{}
	for _, rp := range load(t, dir) {
		for _, mode := range modes {
			replay(t, rp, mode, book, got)
		}
	}
	keys := make([]string, 0, len(got))
	for k := range got {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	condensed := 0
	for _, k := range keys {
		book.Add(k + ": " + got[k])
		if !strings.Contains(got[k], "| = as received") {
			condensed++
		}
	}
	goldenview.Check(t, goldenFile, book.Bytes(goldenHeaderText), *update,
		"go test ./internal/e2e/golden/ -run TestForwardedBodies -update")
	t.Logf("%d forwarded bodies compared, %d of them changed", len(got), condensed)
}

// replay sends rp's sampled turns in mode through a fresh proxy and adds
// "applied | hash | items" per request to got.
func replay(t *testing.T, rp replayed, mode string, book *goldenview.Book, got map[string]string) {
	t.Helper()
	st := harness.New(harness.Options{Window: window, Summarizer: "extractive"})
	defer st.Close()
	rec := &recorder{bodies: map[string][]byte{}, twice: map[string]bool{},
		next: fakeupstream.Mux(st.Fake, &fakeupstream.Messages{Counter: st.Counter}, &fakeupstream.Responses{Counter: st.Counter})}
	st.SetUpstream(rec)
	for k := 0; k < rp.turns; k++ {
		if k%every != 0 && k != rp.turns-1 {
			continue
		}
		body, err := rp.request(k)
		if err != nil {
			t.Fatal(err)
		}
		id := fmt.Sprintf("%s/%s/%s/%d", rp.format, mode, rp.name, k)
		applied := send(t, st.Proxy.URL+rp.path, id, mode, body)
		st.Drain()
		rec.mu.Lock()
		fwd, ok := rec.bodies[id]
		twice := rec.twice[id]
		rec.mu.Unlock()
		switch {
		case !ok:
			t.Fatalf("%s: never reached the upstream", id)
		case twice:
			got[id] = applied + " | forwarded twice"
		default:
			got[id] = applied + " | " + book.Render(codecs[rp.format], body, fwd)
		}
	}
}

// send posts body as request id in mode and returns the answer's
// X-Condense-Applied ("-": none).
func send(t *testing.T, url, id, mode string, body []byte) string {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer sk-golden")
	req.Header.Set("X-Condense-Mode", mode)
	req.Header.Set(goldenHeader, id)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s: %v", id, err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("%s: status %d", id, resp.StatusCode)
	}
	if applied := resp.Header.Get("X-Condense-Applied"); applied != "" {
		return applied
	}
	return "-"
}
