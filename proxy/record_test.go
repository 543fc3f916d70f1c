package proxy

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// chanRecorder hands each Event to the test.
type chanRecorder chan Event

func (c chanRecorder) Record(ev Event) { c <- ev }

func (c chanRecorder) next(t *testing.T) Event {
	t.Helper()
	select {
	case ev := <-c:
		return ev
	case <-time.After(5 * time.Second):
		t.Fatal("no event recorded")
		return Event{}
	}
}

func TestRecorderGetsOneEventPerChatRequest(t *testing.T) {
	rec := make(chanRecorder, 16)
	sc := NewScoper([]byte("test"), nil)
	h := newHarness(t, nil, func(o *Options) { o.Recorder = rec; o.Scoper = sc })
	hdr := map[string]string{"Authorization": "Bearer sk-rec", "User-Agent": "agent/1.0", HeaderMode: "selective"}
	before := time.Now()
	resp := post(t, h.proxy.URL+"/v1/chat/completions", []byte(chatBody), hdr)
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()

	ev := rec.next(t)
	if ev.Route != "chat" || ev.Mode != "selective" || ev.UserAgent != "agent/1.0" || ev.Status != 200 {
		t.Errorf("event %+v", ev)
	}
	if want := sc.Scope(http.Header{"Authorization": {"Bearer sk-rec"}}); ev.Scope != want {
		t.Errorf("scope %q, want %q", ev.Scope, want)
	}
	if ev.Time.Before(before.Add(-time.Second)) || ev.Duration <= 0 {
		t.Errorf("time %v, duration %v", ev.Time, ev.Duration)
	}
	if !ev.Report.Counted || ev.Report.Model != "gpt-4o" || ev.Report.TokensBefore == 0 {
		t.Errorf("report %+v", ev.Report)
	}

	// Other paths, and requests refused before condensing, record nothing:
	// the next event is that of a chat request sent after them (a wait
	// for "no event" would pass on an event not recorded yet).
	for _, path := range []string{"/v1/models", "/healthz"} {
		r, err := http.Get(h.proxy.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, r.Body)
		r.Body.Close()
	}
	resp = sendPartial(t, h.proxy.URL, map[string]string{"Content-Length": "99999999999"}, "", false)
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Fatalf("oversized body: %d", resp.StatusCode)
	}
	resp = post(t, h.proxy.URL+"/v1/chat/completions", []byte(chatBody), map[string]string{"User-Agent": "sentinel/1"})
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if ev := rec.next(t); ev.UserAgent != "sentinel/1" {
		t.Fatalf("an event for %s (status %d) was recorded", ev.Route, ev.Status)
	}

	// An upstream error is recorded with its status.
	resp = post(t, h.proxy.URL+"/v1/chat/completions", []byte(`{"model":"gpt-4o","messages":[{"role":"tool","content":"orphan"}]}`), nil)
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if ev := rec.next(t); ev.Status != resp.StatusCode || ev.Status < 400 {
		t.Errorf("status %d recorded, client got %d", ev.Status, resp.StatusCode)
	}
}

func TestUIMountedOutsideInboundAuth(t *testing.T) {
	page := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "page "+r.URL.Path)
	})
	h := newHarness(t, nil, func(o *Options) { o.UI = page; o.AuthKeys = []string{"k"} })
	for _, path := range []string{"/ui", "/ui/api/overview"} {
		resp, err := http.Get(h.proxy.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || string(b) != "page "+path {
			t.Errorf("%s: %d %q", path, resp.StatusCode, b)
		}
	}
	// Not the page: still guarded.
	resp, _ := http.Get(h.proxy.URL + "/uix")
	resp.Body.Close()
	if resp.StatusCode != 401 {
		t.Errorf("/uix: %d, want 401", resp.StatusCode)
	}

	// Without a UI, /ui is an ordinary path: guarded and passed through.
	plain := newHarness(t, nil, func(o *Options) { o.AuthKeys = []string{"k"} })
	resp, _ = http.Get(plain.proxy.URL + "/ui")
	resp.Body.Close()
	if resp.StatusCode != 401 {
		t.Errorf("/ui without a UI: %d, want 401", resp.StatusCode)
	}
	req, _ := http.NewRequest(http.MethodGet, plain.proxy.URL+"/ui", nil)
	req.Header.Set("Authorization", "Bearer k")
	resp, _ = http.DefaultClient.Do(req)
	resp.Body.Close()
	if got := plain.fake.Received(); len(got) != 1 || !strings.HasSuffix(got[0].Path, "/ui") {
		t.Errorf("/ui not passed through: %+v", got)
	}
}
