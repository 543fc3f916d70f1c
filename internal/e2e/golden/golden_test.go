// Package golden_test pins what the proxy forwards: a few sessions of the
// shared corpus are replayed turn by turn in every wire format (chat
// completions, Anthropic Messages, OpenAI Responses) and mode (off, full
// with the extractive summarizer, selective, auto), and the SHA-256 of
// every body the upstream received is compared with testdata/forwarded.txt.
// A change of the engine that changes a forwarded byte fails here, request
// by request; an intended one is recorded by refreshing the file
//
//	go test ./internal/e2e/golden/ -run TestForwardedBodies -update
//
// and saying in the commit why those requests changed.
package golden_test

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
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

	"github.com/condense-proxy/condense-proxy/internal/corpus"
	"github.com/condense-proxy/condense-proxy/internal/fakeupstream"
	"github.com/condense-proxy/condense-proxy/internal/harness"
	"github.com/condense-proxy/condense-proxy/internal/testenv"
)

var update = flag.Bool("update", false, "rewrite testdata/forwarded.txt from what the proxy forwards now")

const goldenFile = "testdata/forwarded.txt"

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

// recorder keeps the SHA-256 of every body forwarded with goldenHeader
// (summarizer calls carry none), then hands the request to next.
type recorder struct {
	next http.Handler
	mu   sync.Mutex
	sums map[string]string
}

func (rc *recorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if id := r.Header.Get(goldenHeader); id != "" {
		body, _ := io.ReadAll(r.Body)
		sum := sha256.Sum256(body)
		rc.mu.Lock()
		if _, dup := rc.sums[id]; dup {
			rc.sums[id] = "forwarded twice"
		} else {
			rc.sums[id] = hex.EncodeToString(sum[:])
		}
		rc.mu.Unlock()
		r.Body = io.NopCloser(bytes.NewReader(body))
	}
	rc.next.ServeHTTP(w, r)
}

// TestForwardedBodies replays the sessions in every format and mode, one
// fresh proxy per replay, each request after the background work of the
// one before has finished (so what is cached when a request arrives does
// not depend on timing), and compares each forwarded body's SHA-256 and
// X-Condense-Applied with the golden file.
func TestForwardedBodies(t *testing.T) {
	dir := corpusDir(t)
	got := map[string]string{}
	for _, rp := range load(t, dir) {
		for _, mode := range modes {
			replay(t, rp, mode, got)
		}
	}
	if *update {
		var b strings.Builder
		b.WriteString("# format/mode/session/turn applied sha256 — written by TestForwardedBodies -update\n")
		for _, k := range sortedKeys(got) {
			fmt.Fprintf(&b, "%s %s\n", k, got[k])
		}
		if err := os.WriteFile(goldenFile, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("wrote %d forwarded bodies to %s", len(got), goldenFile)
		return
	}
	want := readGolden(t)
	for _, k := range sortedKeys(want) {
		g, ok := got[k]
		switch {
		case !ok:
			t.Errorf("%s: not replayed (golden %s)", k, want[k])
		case g != want[k]:
			t.Errorf("%s: forwarded %s, golden %s", k, g, want[k])
		}
	}
	for _, k := range sortedKeys(got) {
		if _, ok := want[k]; !ok {
			t.Errorf("%s: replayed (%s) but not in the golden file", k, got[k])
		}
	}
	condensed := 0
	for _, v := range got {
		if !strings.HasPrefix(v, "none ") {
			condensed++
		}
	}
	t.Logf("%d forwarded bodies compared, %d of them condensed", len(got), condensed)
}

// replay sends rp's sampled turns in mode through a fresh proxy and adds
// "applied sha256" per request to got.
func replay(t *testing.T, rp replayed, mode string, got map[string]string) {
	t.Helper()
	st := harness.New(harness.Options{Window: window, Summarizer: "extractive"})
	defer st.Close()
	rec := &recorder{sums: map[string]string{},
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
		req, _ := http.NewRequest(http.MethodPost, st.Proxy.URL+rp.path, bytes.NewReader(body))
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
		st.Drain()
		rec.mu.Lock()
		sum, ok := rec.sums[id]
		rec.mu.Unlock()
		if !ok {
			t.Fatalf("%s: never reached the upstream", id)
		}
		applied := resp.Header.Get("X-Condense-Applied")
		if applied == "" {
			applied = "-"
		}
		got[id] = applied + " " + sum
	}
}

func readGolden(t *testing.T) map[string]string {
	t.Helper()
	f, err := os.Open(goldenFile)
	if err != nil {
		t.Fatalf("%v (write it with -update)", err)
	}
	defer f.Close()
	want := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, v, ok := strings.Cut(line, " ")
		if !ok {
			t.Fatalf("%s: bad line %q", goldenFile, line)
		}
		want[k] = v
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return want
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
