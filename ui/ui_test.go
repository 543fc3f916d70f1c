package ui

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/condense-proxy/condense-proxy/condense"
	"github.com/condense-proxy/condense-proxy/proxy"
)

const (
	loopback = "127.0.0.1:40000"
	remote   = "192.0.2.7:40000"
)

// call sends GET path to h from addr with the headers in hdr ("Name:
// value" pairs) and decodes a JSON answer into out (when not nil).
func call(t *testing.T, h http.Handler, path, addr string, out any, hdr ...string) *httptest.ResponseRecorder {
	t.Helper()
	r := httptest.NewRequest(http.MethodGet, path, nil)
	r.RemoteAddr = addr
	for _, kv := range hdr {
		k, v, _ := strings.Cut(kv, ":")
		r.Header.Set(k, strings.TrimSpace(v))
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	if out != nil && w.Code == http.StatusOK {
		if err := json.Unmarshal(w.Body.Bytes(), out); err != nil {
			t.Fatalf("%s: %v\n%s", path, err, w.Body)
		}
	}
	return w
}

type overviewResp struct {
	overviewJSON
}

type listResp struct {
	Access        string     `json:"access"`
	Conversations []convJSON `json:"conversations"`
}

type convResp struct {
	Access       string        `json:"access"`
	Conversation convJSON      `json:"conversation"`
	Requests     []requestJSON `json:"requests"`
}

type detailResp struct {
	Access  string     `json:"access"`
	Content bool       `json:"content"`
	Request detailJSON `json:"request"`
}

func record(u *UI, evs []proxy.Event) {
	for _, ev := range evs {
		u.Record(ev)
	}
}

func TestOverviewCounts(t *testing.T) {
	u := New(Options{Scope: scopeOf, TrustLoopback: true})
	now := time.Now()
	u.now = func() time.Time { return now }
	evs := session(bearer("ka"), "conv-a", "gpt-4o", "agent/1", now.Add(-17*time.Minute), 50)
	record(u, evs)
	// Not a request the engine understands, with an upstream error.
	u.Record(proxy.Event{Time: now, Scope: bearer("ka"), Route: "chat", Mode: "auto", Status: 400,
		Report: condense.Report{Applied: condense.AppliedNone, Reason: "not a chat request"}})
	// A conversation the engine did not name: no prefix reuse counted.
	u.Record(proxy.Event{Time: now, Scope: bearer("kb"), Route: "chat", Mode: "off", Status: 200,
		Report: condense.Report{Counted: true, Model: "qwen3-coder", Applied: condense.AppliedNone, TokensBefore: 100, TokensAfter: 100, Window: 1000, Trigger: 800, PrefixReused: 0}})

	var want totals
	outcomes := map[string]int64{}
	applied := map[string]int64{}
	for _, ev := range evs {
		r := ev.Report
		want.TokensReceived += int64(r.TokensBefore)
		want.TokensForwarded += int64(r.TokensAfter)
		want.SummarizerCalls += int64(r.Calls)
		if r.PrefixReused >= 0 {
			want.PrefixReused += int64(r.PrefixReused)
			want.PrefixForwarded += int64(r.TokensAfter)
			want.PrefixRequests++
		}
		if r.Degraded != "" {
			want.Degraded++
		}
		outcomes[outcomeOf(&r)]++
		if r.Applied != condense.AppliedNone {
			applied[r.Applied]++
		}
	}
	want.Requests = int64(len(evs)) + 2
	want.Errors = 1
	want.TokensReceived += 100
	want.TokensForwarded += 100
	outcomes[outcomeNotCounted]++
	outcomes[outcomePassed]++

	var ov overviewResp
	if w := call(t, u, "/ui/api/overview", loopback, &ov); w.Code != 200 {
		t.Fatalf("status %d", w.Code)
	}
	got := ov.Totals
	if got.Requests != want.Requests || got.Errors != want.Errors || got.TokensReceived != want.TokensReceived ||
		got.TokensForwarded != want.TokensForwarded || got.PrefixReused != want.PrefixReused ||
		got.PrefixForwarded != want.PrefixForwarded || got.PrefixRequests != want.PrefixRequests ||
		got.SummarizerCalls != want.SummarizerCalls || got.Degraded != want.Degraded {
		t.Errorf("totals\n got %+v\nwant %+v", got, want)
	}
	if got.Summaries == 0 || got.Digests == 0 || got.Windows != 1 {
		t.Errorf("new changes by kind: %d summaries, %d digests, %d windows", got.Summaries, got.Digests, got.Windows)
	}
	for k, n := range outcomes {
		if ov.Outcomes[k] != n {
			t.Errorf("outcome %s: %d, want %d", k, ov.Outcomes[k], n)
		}
	}
	for k, n := range applied {
		if ov.Applied[k] != n {
			t.Errorf("applied %s: %d, want %d", k, ov.Applied[k], n)
		}
	}
	if len(ov.Modes) != 2 || ov.Modes[0].Mode != "auto" || ov.Modes[1].Mode != "off" || ov.Modes[1].Passed != 1 {
		t.Errorf("modes %+v", ov.Modes)
	}
	if len(ov.Models) != 2 || ov.Models[0].Model != "gpt-4o" || ov.Models[0].Requests != int64(len(evs)) || ov.Models[1].Model != "qwen3-coder" {
		t.Errorf("models %+v", ov.Models)
	}
	if len(ov.Degraded) != 1 || ov.Degraded[0].Reason != "summarizer failed" || ov.Degraded[0].Kind != condense.DegradedSummarizerFailed || ov.Degraded[0].Count != 1 {
		t.Errorf("degraded reasons %+v", ov.Degraded)
	}
	if len(ov.Minutes) != minutes {
		t.Fatalf("%d minutes", len(ov.Minutes))
	}
	var perMinute int64
	for _, m := range ov.Minutes {
		perMinute += m.Requests
	}
	if perMinute != want.Requests || ov.Minutes[minutes-1].Requests == 0 {
		t.Errorf("per-minute requests %d (last %d), want %d", perMinute, ov.Minutes[minutes-1].Requests, want.Requests)
	}
	if ov.Access != "admin" || ov.Conversations != 2 || ov.Version != uint64(want.Requests) {
		t.Errorf("access %s, conversations %d, version %d", ov.Access, ov.Conversations, ov.Version)
	}
}

func TestConversationsAndTimeline(t *testing.T) {
	u := New(Options{Scope: scopeOf, TrustLoopback: true})
	t0 := time.Now().Add(-time.Hour)
	a := session(bearer("ka"), "conv-a", "gpt-4o", "agent-a/1", t0, 30)
	b := session(bearer("kb"), "conv-b", "claude-sonnet-4", "agent-b/2", t0.Add(time.Minute), 10)
	record(u, a)
	record(u, b)
	u.Record(a[len(a)-1]) // a is active again: newest

	var list listResp
	call(t, u, "/ui/api/conversations", loopback, &list)
	if len(list.Conversations) != 2 {
		t.Fatalf("%d conversations", len(list.Conversations))
	}
	first := list.Conversations[0]
	if first.Model != "gpt-4o" || first.UserAgent != "agent-a/1" || first.Requests != 31 || !first.Identified || !first.Content || first.Format != "chat" {
		t.Errorf("newest conversation %+v", first)
	}
	last := a[len(a)-1].Report
	if first.TokensReceived != last.TokensBefore || first.TokensForwarded != last.TokensAfter || first.Window != last.Window ||
		first.Trigger != last.Trigger || first.Applied != last.Applied || first.Mode != "auto" {
		t.Errorf("tokens now %+v, want the last request's %+v", first, last)
	}

	var conv convResp
	if w := call(t, u, "/ui/api/conversations/"+first.ID, loopback, &conv); w.Code != 200 {
		t.Fatalf("conversation: %d", w.Code)
	}
	if len(conv.Requests) != 31 || conv.Requests[0].N != 1 || conv.Requests[30].N != 31 {
		t.Fatalf("%d requests, first %d", len(conv.Requests), conv.Requests[0].N)
	}
	sawNew := false
	for i, q := range conv.Requests[:30] {
		r := a[i].Report
		if q.TokensReceived != r.TokensBefore || q.TokensForwarded != r.TokensAfter || q.Applied != r.Applied ||
			q.Degraded != (r.Degraded != "") || q.Messages != r.Messages || q.PrefixReused != r.PrefixReused {
			t.Errorf("request %d: %+v, report %+v", q.N, q, r)
		}
		if q.New != [3]int{} {
			sawNew = true
		}
		if i > 0 && q.New[0]+q.New[1] > 0 && q.Summaries+q.Digests == conv.Requests[i-1].Summaries+conv.Requests[i-1].Digests && q.New == conv.Requests[i-1].New {
			t.Errorf("request %d: the same changes as before counted as new", q.N)
		}
	}
	if !sawNew {
		t.Error("no request has new changes")
	}
	if w := call(t, u, "/ui/api/conversations/ffffffffffffffff", loopback, nil); w.Code != 404 {
		t.Errorf("unknown conversation: %d", w.Code)
	}
	if w := call(t, u, "/ui/api/nope", loopback, nil); w.Code != 404 {
		t.Errorf("unknown endpoint: %d", w.Code)
	}
}

func TestRequestDetail(t *testing.T) {
	u := New(Options{Scope: scopeOf, TrustLoopback: true})
	evs := session(bearer("ka"), "conv-a", "gpt-4o", "agent/1", time.Now(), 45)
	// The report's strings are views into a buffer the proxy reuses: the
	// page must keep copies.
	buf := []byte("digest text from the body")
	last := &evs[len(evs)-1].Report
	last.Changes = append(last.Changes, condense.Change{Kind: condense.ChangeDigest, ID: "dg-x", From: 30, To: 31, Tool: "read_file",
		TokensBefore: 900, TokensAfter: 50, Text: unsafe.String(&buf[0], len(buf))})
	record(u, evs)
	copy(buf, "XXXXXXXXXXXXXXXXXXXXXXXXX")

	var list listResp
	call(t, u, "/ui/api/conversations", loopback, &list)
	id := list.Conversations[0].ID

	var d detailResp
	if w := call(t, u, fmt.Sprintf("/ui/api/conversations/%s/requests/%d", id, len(evs)), loopback, &d); w.Code != 200 {
		t.Fatalf("detail: %d %s", w.Code, w.Body)
	}
	rq := d.Request
	if !d.Content || !rq.Detail || rq.N != len(evs) || rq.Reason == "" {
		t.Errorf("detail %+v", rq)
	}
	if len(rq.Received) != len(last.Received) || len(rq.Forwarded) != len(last.Forwarded) || rq.Received[0] != last.Received[0] {
		t.Errorf("shapes: %d received, %d forwarded", len(rq.Received), len(rq.Forwarded))
	}
	if len(rq.Changes) != len(last.Changes) {
		t.Fatalf("%d changes, want %d", len(rq.Changes), len(last.Changes))
	}
	kinds := map[string]bool{}
	for _, ch := range rq.Changes {
		kinds[ch.Kind] = true
		if ch.Text == "" || ch.ID == "" || ch.Originals != "/v1/condense/originals/"+ch.ID {
			t.Errorf("change %+v", ch)
		}
	}
	if !kinds["summary"] || !kinds["window"] || !kinds["digest"] {
		t.Errorf("kinds %v", kinds)
	}
	if got := rq.Changes[len(rq.Changes)-1]; got.Text != "digest text from the body" || got.Tool != "read_file" {
		t.Errorf("kept text %q: not a copy", got.Text)
	}

	// A pass-through request keeps its detail only while it is the latest.
	var c convResp
	call(t, u, "/ui/api/conversations/"+id, loopback, &c)
	if c.Requests[0].Detail {
		t.Error("the first request (passed, not the latest) still has its detail")
	}
	for _, path := range []string{"/requests/0", "/requests/999", "/requests/x"} {
		if w := call(t, u, "/ui/api/conversations/"+id+path, loopback, nil); w.Code != 404 && w.Code != 400 {
			t.Errorf("%s: %d", path, w.Code)
		}
	}
}

func TestBounds(t *testing.T) {
	u := New(Options{Scope: scopeOf, TrustLoopback: true, MaxConversations: 2, MaxRequestsPerConversation: 5, MaxDetailBytes: 6000})
	t0 := time.Now()
	record(u, session("s1", "c1", "m", "ua", t0, 3))
	record(u, session("s2", "c2", "m", "ua", t0, 3))
	var list listResp
	call(t, u, "/ui/api/conversations", loopback, &list)
	oldest := list.Conversations[1].ID
	record(u, session("s3", "c3", "m", "ua", t0, 45))
	call(t, u, "/ui/api/conversations", loopback, &list)
	if len(list.Conversations) != 2 {
		t.Fatalf("%d conversations kept, want 2", len(list.Conversations))
	}
	if w := call(t, u, "/ui/api/conversations/"+oldest, loopback, nil); w.Code != 404 {
		t.Errorf("the least recently active conversation is still served: %d", w.Code)
	}
	var c convResp
	call(t, u, "/ui/api/conversations/"+list.Conversations[0].ID, loopback, &c)
	if c.Conversation.Requests != 45 || c.Conversation.Kept != 5 || len(c.Requests) != 5 || c.Requests[0].N != 41 {
		t.Errorf("requests %d, kept %d, rows %d from %d", c.Conversation.Requests, c.Conversation.Kept, len(c.Requests), c.Requests[0].N)
	}
	if w := call(t, u, "/ui/api/conversations/"+c.Conversation.ID+"/requests/40", loopback, nil); w.Code != 404 {
		t.Errorf("a dropped request is served: %d", w.Code)
	}
	// The detail budget: the newest details stay, the oldest go.
	if !c.Requests[4].Detail || c.Requests[0].Detail {
		t.Errorf("details kept: first %v, last %v", c.Requests[0].Detail, c.Requests[4].Detail)
	}
	s := u.st
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.detailBytes > 6000 || s.detailBytes < 0 {
		t.Errorf("detail bytes %d over the budget", s.detailBytes)
	}
	n, bytes := 0, 0
	for e := s.details.Front(); e != nil; e = e.Next() {
		n++
		bytes += e.Value.(*detail).size
	}
	if bytes != s.detailBytes || len(s.convs) != 2 || len(s.byID) != 2 || s.lru.Len() != 2 {
		t.Errorf("accounting: %d details of %d bytes, counted %d; %d/%d/%d conversations", n, bytes, s.detailBytes, len(s.convs), len(s.byID), s.lru.Len())
	}
}

func TestNamesAreBounded(t *testing.T) {
	u := New(Options{Scope: scopeOf})
	for i := 0; i < 3*maxModels; i++ {
		u.Record(proxy.Event{Time: time.Now(), Scope: "s", Mode: fmt.Sprint("mode-", i), Status: 200, Report: condense.Report{
			Counted: true, Model: fmt.Sprint("model-", i), Applied: fmt.Sprint("applied-", i), Degraded: fmt.Sprintf("reason %c%c: detail", 'a'+i%26, 'a'+i/26),
			Conversation: fmt.Sprint("c", i%5), TokensBefore: 10, TokensAfter: 10,
		}})
	}
	var ov overviewResp
	call(t, u, "/ui/api/overview", loopback, &ov)
	if len(ov.Models) > maxModels+1 || len(ov.Degraded) != maxDegradedReasons+1 || len(ov.Modes) != 1 || ov.Modes[0].Mode != otherKey {
		t.Errorf("%d models, %d reasons, modes %+v", len(ov.Models), len(ov.Degraded), ov.Modes)
	}
}

// TestLongModelNamesBounded: requests with 1 MB model names (as a Recorder
// other than the proxy may hand them) leave the overview and the
// conversation list small: names cut to proxy.MaxModelName, distinct
// ones kept apart, those past maxModels folded into one row.
func TestLongModelNamesBounded(t *testing.T) {
	u := New(Options{Scope: scopeOf, TrustLoopback: true})
	for i := range 70 {
		u.Record(proxy.Event{Time: time.Now(), Scope: "s", Status: 200, Report: condense.Report{
			Counted: true, Model: strings.Repeat("m", 1<<20) + fmt.Sprint(i), Conversation: fmt.Sprint("c", i),
			TokensBefore: 10, TokensAfter: 10,
		}})
	}
	var ov overviewResp
	w := call(t, u, "/ui/api/overview", loopback, &ov)
	if w.Body.Len() > 64<<10 {
		t.Errorf("overview of %d bytes", w.Body.Len())
	}
	names := map[string]bool{}
	for _, m := range ov.Models {
		if len(m.Model) > proxy.MaxModelName {
			t.Fatalf("model name of %d bytes in the overview", len(m.Model))
		}
		names[m.Model] = true
	}
	if len(ov.Models) != maxModels+1 || len(names) != len(ov.Models) || !names[otherKey] {
		t.Errorf("%d model rows (%d distinct), want %d with %q", len(ov.Models), len(names), maxModels+1, otherKey)
	}
	w = call(t, u, "/ui/api/conversations", loopback, nil)
	if w.Body.Len() > 256<<10 {
		t.Errorf("conversation list of %d bytes", w.Body.Len())
	}
}

// TestAuthRules checks every data endpoint under each way of configuring
// keys and each kind of viewer.
func TestAuthRules(t *testing.T) {
	newUI := func(auth, admin []string, trust bool) (*UI, string, string) {
		u := New(Options{Scope: scopeOf, AuthKeys: auth, AdminKeys: admin, TrustLoopback: trust})
		t0 := time.Now()
		record(u, session(bearer("ka"), "conv-a", "gpt-4o", "agent-a/1", t0, 45))
		// kb's agent sends its key as x-api-key.
		record(u, session(scopeOf(http.Header{"X-Api-Key": {"kb"}}), "conv-b", "gpt-4o", "agent-b/1", t0, 45))
		ids := map[string]string{}
		u.st.mu.Lock()
		for id, c := range u.st.byID {
			ids[c.userAgent] = id
		}
		u.st.mu.Unlock()
		return u, ids["agent-a/1"], ids["agent-b/1"]
	}
	open, openA, openB := newUI(nil, nil, false)
	trusting, trustA, trustB := newUI(nil, nil, true)
	keyed, keyedA, keyedB := newUI([]string{"ka", "kb"}, []string{"admin"}, true)
	adminOnly, adminA, adminB := newUI(nil, []string{"admin"}, false)
	callerOnly, callerA, callerB := newUI([]string{"ka", "kb"}, nil, false)

	tests := []struct {
		name   string
		u      *UI
		a, b   string // conversation ids
		addr   string
		hdr    []string
		access string // "" : 401
		sees   string // which conversations are listed: "ab", "a", "b"
		text   bool   // content shown
	}{
		{"open, loopback", open, openA, openB, loopback, nil, "numbers", "ab", false},
		{"open, IPv6 loopback", open, openA, openB, "[::1]:40000", nil, "numbers", "ab", false},
		{"open, remote", open, openA, openB, remote, nil, "numbers", "ab", false},
		{"open, forwarded to loopback", open, openA, openB, loopback, []string{"X-Forwarded-For: 198.51.100.1"}, "numbers", "ab", false},
		{"open, remote with a key", open, openA, openB, remote, []string{"Authorization: Bearer ka"}, "numbers", "ab", false},
		{"trusted loopback", trusting, trustA, trustB, loopback, nil, "admin", "ab", true},
		{"trusted IPv6 loopback", trusting, trustA, trustB, "[::1]:40000", nil, "admin", "ab", true},
		{"trusted loopback, remote", trusting, trustA, trustB, remote, nil, "numbers", "ab", false},
		{"trusted loopback, X-Forwarded-For", trusting, trustA, trustB, loopback, []string{"X-Forwarded-For: 198.51.100.1"}, "numbers", "ab", false},
		{"trusted loopback, X-Real-Ip", trusting, trustA, trustB, loopback, []string{"X-Real-Ip: 198.51.100.1"}, "numbers", "ab", false},
		{"trusted loopback, Forwarded", trusting, trustA, trustB, loopback, []string{"Forwarded: for=198.51.100.1"}, "numbers", "ab", false},
		{"keys beat trusted loopback", keyed, keyedA, keyedB, loopback, nil, "", "", false},
		{"keys, no key, loopback", keyed, keyedA, keyedB, loopback, nil, "", "", false},
		{"keys, unknown key", keyed, keyedA, keyedB, loopback, []string{"Authorization: Bearer nope"}, "", "", false},
		{"keys, caller a", keyed, keyedA, keyedB, remote, []string{"Authorization: Bearer ka"}, "caller", "a", true},
		{"keys, caller b by x-api-key", keyed, keyedA, keyedB, remote, []string{"X-Api-Key: kb"}, "caller", "b", true},
		{"keys, caller b by bearer", keyed, keyedA, keyedB, remote, []string{"Authorization: Bearer kb"}, "caller", "b", true},
		{"keys, admin", keyed, keyedA, keyedB, remote, []string{"Authorization: Bearer admin"}, "admin", "ab", true},
		{"keys, admin by api-key", keyed, keyedA, keyedB, remote, []string{"Api-Key: admin"}, "admin", "ab", true},
		{"admin keys only, caller key", adminOnly, adminA, adminB, remote, []string{"Authorization: Bearer ka"}, "", "", false},
		{"admin keys only, admin", adminOnly, adminA, adminB, remote, []string{"Authorization: Bearer admin"}, "admin", "ab", true},
		{"auth keys only, no admin", callerOnly, callerA, callerB, loopback, []string{"Authorization: Bearer ka"}, "caller", "a", true},
		{"auth keys only, no key", callerOnly, callerA, callerB, loopback, nil, "", "", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.a == "" || tc.b == "" {
				t.Fatal("conversation ids not found")
			}
			// The page itself: always the document; 401 without access.
			w := call(t, tc.u, "/ui", tc.addr, nil, tc.hdr...)
			wantPage := 200
			if tc.access == "" {
				wantPage = 401
			}
			if w.Code != wantPage || !strings.Contains(w.Body.String(), "<!doctype html>") {
				t.Errorf("page: %d, want %d", w.Code, wantPage)
			}
			paths := []string{"/ui/api/overview", "/ui/api/conversations", "/ui/api/conversations/" + tc.a,
				"/ui/api/conversations/" + tc.a + "/requests/45", "/ui/api/events"}
			if tc.access == "" {
				for _, p := range paths {
					w := call(t, tc.u, p, tc.addr, nil, tc.hdr...)
					if w.Code != 401 || strings.Contains(w.Body.String(), "gpt-4o") {
						t.Errorf("%s: %d, want 401 and nothing of the record", p, w.Code)
					}
				}
				return
			}
			var ov overviewResp
			call(t, tc.u, "/ui/api/overview", tc.addr, &ov, tc.hdr...)
			if ov.Access != tc.access || ov.Totals.Requests != 90 {
				t.Errorf("overview: access %q, %d requests", ov.Access, ov.Totals.Requests)
			}
			var list listResp
			call(t, tc.u, "/ui/api/conversations", tc.addr, &list, tc.hdr...)
			listed := ""
			for _, c := range list.Conversations {
				switch c.ID {
				case tc.a:
					listed += "a"
				case tc.b:
					listed += "b"
				}
				if c.Content != tc.text || (c.UserAgent != "") != tc.text || (c.Caller != "") != tc.text {
					t.Errorf("conversation %s: content %v, user agent %q, caller %q", c.ID, c.Content, c.UserAgent, c.Caller)
				}
			}
			if sortString(listed) != tc.sees {
				t.Errorf("listed %q, want %q", listed, tc.sees)
			}
			for _, who := range []string{"a", "b"} {
				id := map[string]string{"a": tc.a, "b": tc.b}[who]
				want := 404
				if strings.Contains(tc.sees, who) {
					want = 200
				}
				var c convResp
				if w := call(t, tc.u, "/ui/api/conversations/"+id, tc.addr, &c, tc.hdr...); w.Code != want {
					t.Errorf("conversation %s: %d, want %d", who, w.Code, want)
				}
				var d detailResp
				w := call(t, tc.u, "/ui/api/conversations/"+id+"/requests/45", tc.addr, &d, tc.hdr...)
				if w.Code != want {
					t.Errorf("request of %s: %d, want %d", who, w.Code, want)
				}
				if want != 200 {
					if strings.Contains(w.Body.String(), "Task and intent") {
						t.Errorf("request of %s: another caller's text leaked", who)
					}
					continue
				}
				if strings.Contains(d.Request.Reason, ";") && !tc.text {
					t.Errorf("request of %s: numbers-only reason %q", who, d.Request.Reason)
				}
				if len(d.Request.Path) == 0 {
					t.Errorf("request of %s: no path (content %v): its steps are no content", who, tc.text)
				}
				if d.Content != tc.text || len(d.Request.Changes) == 0 || len(d.Request.Received) == 0 {
					t.Errorf("request of %s: content %v, %d changes, %d items", who, d.Content, len(d.Request.Changes), len(d.Request.Received))
				}
				for _, ch := range d.Request.Changes {
					if (ch.Text != "") != tc.text || (ch.ID != "") != tc.text || (ch.Originals != "") != tc.text || ch.TokensBefore == 0 {
						t.Errorf("request of %s: change %+v (content %v)", who, ch, tc.text)
					}
				}
			}
		})
	}
}

func sortString(s string) string {
	if s == "ba" {
		return "ab"
	}
	return s
}

func TestEventsStream(t *testing.T) {
	u := New(Options{Scope: scopeOf})
	srv := httptest.NewServer(u)
	defer srv.Close()
	defer u.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/ui/api/events", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("status %d, type %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	rd := bufio.NewReaderSize(resp.Body, 4096)
	next := func() string {
		t.Helper()
		for {
			line, err := rd.ReadString('\n')
			if err != nil {
				t.Fatalf("stream: %v", err)
			}
			if strings.HasPrefix(line, "data: ") {
				return strings.TrimSpace(line)
			}
		}
	}
	if got := next(); got != `data: {"version":0}` {
		t.Errorf("first event %q", got)
	}
	record(u, session("s", "c", "m", "ua", time.Now(), 3))
	if got := next(); got != `data: {"version":3}` {
		t.Errorf("after three requests: %q", got)
	}
	// Close ends the stream (server shutdown does not wait for it).
	u.Close()
	done := make(chan error, 1)
	go func() {
		_, err := rd.ReadString(0)
		done <- err
	}()
	select {
	case <-done:
	case <-ctx.Done():
		t.Fatal("stream still open after Close")
	}
}

func TestEventsNeedAccessAndAreBounded(t *testing.T) {
	u := New(Options{Scope: scopeOf, AuthKeys: []string{"k"}})
	if w := call(t, u, "/ui/api/events", loopback, nil); w.Code != 401 {
		t.Errorf("no key: %d", w.Code)
	}
	u.streams.Store(maxStreams)
	if w := call(t, u, "/ui/api/events", loopback, nil, "Authorization: Bearer k"); w.Code != http.StatusServiceUnavailable {
		t.Errorf("over the stream bound: %d", w.Code)
	}
}

// TestPageDocument: one document, its script and style allowed by hash,
// nothing loaded from anywhere else.
func TestPageDocument(t *testing.T) {
	u := New(Options{Scope: scopeOf})
	w := call(t, u, "/ui", loopback, nil)
	if w.Code != 200 || !strings.HasPrefix(w.Header().Get("Content-Type"), "text/html") {
		t.Fatalf("status %d, type %q", w.Code, w.Header().Get("Content-Type"))
	}
	doc := w.Body.String()
	csp := w.Header().Get("Content-Security-Policy")
	for _, tag := range []string{"script", "style"} {
		m := regexp.MustCompile(`(?s)<` + tag + `>(.*?)</` + tag + `>`).FindStringSubmatch(doc)
		if m == nil || len(m[1]) < 100 {
			t.Fatalf("no inline %s", tag)
		}
		sum := sha256.Sum256([]byte(m[1]))
		if h := "'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'"; !strings.Contains(csp, tag+"-src "+h) {
			t.Errorf("CSP %q does not allow the inline %s (%s)", csp, tag, h)
		}
	}
	if !strings.Contains(csp, "default-src 'none'") || !strings.Contains(csp, "connect-src 'self'") {
		t.Errorf("CSP %q", csp)
	}
	for _, m := range regexp.MustCompile(`(?:src|href)\s*=\s*["']([^"']*)`).FindAllStringSubmatch(doc, -1) {
		if !strings.HasPrefix(m[1], "#") && !strings.HasPrefix(m[1], "data:") {
			t.Errorf("the page refers to %q", m[1])
		}
	}
	if regexp.MustCompile(`https?://(?:[^w]|w[^w]|ww[^w])`).MatchString(doc) || strings.Contains(doc, "@import") {
		t.Error("the page names a URL other than the SVG namespace")
	}
	if w.Header().Get("Cache-Control") != "no-store" || w.Header().Get("X-Frame-Options") != "DENY" {
		t.Errorf("headers %v", w.Header())
	}
	if w2 := call(t, u, "/ui/", loopback, nil); w2.Body.String() != doc {
		t.Error("/ui/ is not the page")
	}
}

// TestKeyNeverOwnsTheAnonymousScope: when the proxy's scope headers leave
// out the headers keys come in (scope_headers: [X-User]), every key maps
// to the scope of requests without credentials; a caller key then sees
// none of those conversations, not all of them.
func TestKeyNeverOwnsTheAnonymousScope(t *testing.T) {
	byUser := proxy.NewScoper([]byte("ui tests"), []string{"X-User"}).Scope
	u := New(Options{Scope: byUser, AuthKeys: []string{"ka"}})
	record(u, session(byUser(http.Header{}), "conv", "gpt-4o", "agent/1", time.Now(), 3))
	req := httptest.NewRequest(http.MethodGet, "/ui/api/conversations", nil)
	req.Header.Set("Authorization", "Bearer ka")
	rec := httptest.NewRecorder()
	u.ServeHTTP(rec, req)
	var list struct {
		Access        string            `json:"access"`
		Conversations []json.RawMessage `json:"conversations"`
	}
	json.Unmarshal(rec.Body.Bytes(), &list)
	if rec.Code != 200 || list.Access != "caller" || len(list.Conversations) != 0 {
		t.Fatalf("%d, access %q, %d conversations", rec.Code, list.Access, len(list.Conversations))
	}
}

// TestConcurrentRecord: eight conversations recorded from eight goroutines
// at once give the same overview and the same timelines as recorded one
// after the other.
func TestConcurrentRecord(t *testing.T) {
	t0 := time.Now().Add(-30 * time.Minute)
	var sessions [][]proxy.Event
	for i := range 8 {
		sessions = append(sessions, session(bearer(fmt.Sprint("k", i)), fmt.Sprint("conv-", i), "gpt-4o", "agent/1", t0, 40))
	}
	serial := New(Options{Scope: scopeOf, TrustLoopback: true})
	for _, evs := range sessions {
		record(serial, evs)
	}
	parallel := New(Options{Scope: scopeOf, TrustLoopback: true})
	var wg sync.WaitGroup
	for _, evs := range sessions {
		wg.Add(1)
		go func() {
			defer wg.Done()
			record(parallel, evs)
		}()
	}
	wg.Wait()

	now := time.Now()
	serial.now = func() time.Time { return now }
	parallel.now = func() time.Time { return now }
	var a, b overviewResp
	call(t, serial, "/ui/api/overview", loopback, &a)
	call(t, parallel, "/ui/api/overview", loopback, &b)
	if a.Totals != b.Totals || a.Totals.Requests != 8*40 {
		t.Fatalf("totals\nserial   %+v\nparallel %+v", a.Totals, b.Totals)
	}
	// As JSON: the figures are pointers (null when not defined).
	sa, _ := json.Marshal([]any{a.Outcomes, a.Applied, a.Models, a.Minutes, a.BillSaving, a.CacheReadShare})
	sb, _ := json.Marshal([]any{b.Outcomes, b.Applied, b.Models, b.Minutes, b.BillSaving, b.CacheReadShare})
	if string(sa) != string(sb) {
		t.Errorf("overview differs:\nserial   %s\nparallel %s", sa, sb)
	}
	var la, lb listResp
	call(t, serial, "/ui/api/conversations", loopback, &la)
	call(t, parallel, "/ui/api/conversations", loopback, &lb)
	if len(la.Conversations) != 8 || len(lb.Conversations) != 8 {
		t.Fatalf("%d and %d conversations, want 8", len(la.Conversations), len(lb.Conversations))
	}
	for _, c := range la.Conversations {
		var ca, cb convResp
		call(t, serial, "/ui/api/conversations/"+c.ID, loopback, &ca)
		if w := call(t, parallel, "/ui/api/conversations/"+c.ID, loopback, &cb); w.Code != 200 {
			t.Fatalf("conversation %s missing from the parallel record", c.ID)
		}
		if fmt.Sprint(ca.Requests) != fmt.Sprint(cb.Requests) {
			t.Errorf("conversation %s: timelines differ", c.ID)
		}
	}
}

// TestOneCallerCannotPushAnothersConversationsOff: at the bound on
// conversations, a caller starting new ones pushes out its own least
// recently active, not another caller's.
func TestOneCallerCannotPushAnothersConversationsOff(t *testing.T) {
	u := New(Options{Scope: scopeOf, AuthKeys: []string{"ka", "kb"}})
	t0 := time.Now()
	for i := range 33 {
		record(u, session(bearer("ka"), fmt.Sprint("a", i), "m", "ua", t0.Add(time.Duration(i)*time.Second), 1))
	}
	for i := range 105 {
		record(u, session(bearer("kb"), fmt.Sprint("b", i), "m", "ua", t0.Add(time.Minute+time.Duration(i)*time.Second), 1))
	}
	count := func(key string) int {
		var list listResp
		if w := call(t, u, "/ui/api/conversations", remote, &list, "Authorization: Bearer "+key); w.Code != 200 {
			t.Fatalf("list as %s: %d", key, w.Code)
		}
		return len(list.Conversations)
	}
	if a, b := count("ka"), count("kb"); a != 33 || b != 100-33 {
		t.Fatalf("caller a keeps %d conversations (want 33), caller b %d (want 67)", a, b)
	}
	// A caller alone at the bound: its least recently active goes.
	for i := range 100 {
		record(u, session(bearer("ka"), fmt.Sprint("a2-", i), "m", "ua", t0.Add(time.Hour+time.Duration(i)*time.Second), 1))
	}
	if a, b := count("ka"), count("kb"); a+b != 100 || b != 50 {
		t.Fatalf("after a's 100 more: a %d, b %d (want 50 each: the larger loses first)", a, b)
	}
}

// originalsMap is a fake originals store: scope → id → messages.
type originalsMap map[string]map[string]string

func (m originalsMap) Originals(_ context.Context, scope, id string) ([]byte, bool) {
	v, ok := m[scope][id]
	return []byte(v), ok
}

// TestAdminOpensOriginals: with the originals given to the page, a
// change's originals link is the page's own endpoint, which reads them in
// the conversation's scope for an admin key and the conversation's own
// key — never for another caller's key or a numbers-only viewer.
func TestAdminOpensOriginals(t *testing.T) {
	store := originalsMap{bearer("ka"): {"orig-1": `[{"role":"tool","content":"the full test log"}]`}}
	u := New(Options{Scope: scopeOf, AuthKeys: []string{"ka", "kb"}, AdminKeys: []string{"admin"}, Originals: store})
	evs := session(bearer("ka"), "conv-a", "gpt-4o", "agent/1", time.Now(), 1)
	evs[0].Report.Changes = []condense.Change{{Kind: condense.ChangeSummary, ID: "orig-1", From: 2, To: 9, TokensBefore: 900, TokensAfter: 50, Text: "a summary"}}
	record(u, evs)
	var list listResp
	call(t, u, "/ui/api/conversations", remote, &list, "Authorization: Bearer admin")
	if len(list.Conversations) != 1 {
		t.Fatalf("admin lists %d conversations", len(list.Conversations))
	}
	cid := list.Conversations[0].ID
	var d detailResp
	if w := call(t, u, "/ui/api/conversations/"+cid+"/requests/1", remote, &d, "Authorization: Bearer admin"); w.Code != 200 || len(d.Request.Changes) != 1 {
		t.Fatalf("detail: %d %s", w.Code, w.Body)
	}
	link := d.Request.Changes[0].Originals
	if want := "/ui/api/conversations/" + cid + "/originals/orig-1"; link != want {
		t.Fatalf("originals link %q, want %q", link, want)
	}
	for _, tc := range []struct {
		name, auth string
		want       int
	}{
		{"admin", "Authorization: Bearer admin", 200},
		{"own key", "Authorization: Bearer ka", 200},
		{"another caller", "Authorization: Bearer kb", 404},
		{"no key", "", 401},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got struct {
				ID       string          `json:"id"`
				Messages json.RawMessage `json:"messages"`
			}
			w := call(t, u, link, remote, &got, tc.auth)
			if w.Code != tc.want {
				t.Fatalf("%d %s, want %d", w.Code, w.Body, tc.want)
			}
			if w.Code == 200 && (got.ID != "orig-1" || !strings.Contains(string(got.Messages), "the full test log")) {
				t.Errorf("answer %s", w.Body)
			}
		})
	}
	if w := call(t, u, "/ui/api/conversations/"+cid+"/originals/unknown", remote, nil, "Authorization: Bearer admin"); w.Code != 404 {
		t.Errorf("unknown id: %d", w.Code)
	}
	// Numbers only (no keys configured): the conversation is listed, its
	// originals are not served.
	open := New(Options{Scope: scopeOf, Originals: store})
	record(open, evs)
	if w := call(t, open, "/ui/api/conversations/"+cid+"/originals/orig-1", remote, nil); w.Code != 403 {
		t.Errorf("numbers-only viewer: %d %s", w.Code, w.Body)
	}
}

// TestSummariesFromTheSummaryCache: new summaries read from the summary
// cache (made ahead, or by another replica) are counted apart from those
// the request's summarizer calls made, so "0 summarizer calls" beside
// "2 summaries" says where they came from.
func TestSummariesFromTheSummaryCache(t *testing.T) {
	u := New(Options{Scope: scopeOf, TrustLoopback: true})
	sum := func(id string) condense.Change {
		return condense.Change{Kind: condense.ChangeSummary, ID: id, From: 2, To: 9, TokensBefore: 900, TokensAfter: 50}
	}
	ev := func(n int, rep condense.Report) proxy.Event {
		rep.Counted, rep.Conversation, rep.Applied, rep.TokensBefore, rep.TokensAfter = true, "c", condense.AppliedFull, 1000, 500
		return proxy.Event{Time: time.Unix(int64(1000+n), 0), Scope: bearer("ka"), Status: 200, Report: rep}
	}
	record(u, []proxy.Event{
		// Two new summaries, both read from the cache: no call.
		ev(1, condense.Report{Changes: []condense.Change{sum("s1"), sum("s2")}, SummariesCached: 2}),
		// The same two again (not new) and one made by a call.
		ev(2, condense.Report{Changes: []condense.Change{sum("s1"), sum("s2"), sum("s3")}, SummariesCached: 2, SummariesMade: 1, Calls: 1}),
	})
	var ov overviewResp
	if w := call(t, u, "/ui/api/overview", loopback, &ov); w.Code != 200 {
		t.Fatalf("status %d", w.Code)
	}
	if got := ov.Totals; got.Summaries != 3 || got.SummariesCached != 2 || got.SummarizerCalls != 1 {
		t.Errorf("%d summaries, %d from the summary cache, %d summarizer calls; want 3, 2, 1", got.Summaries, got.SummariesCached, got.SummarizerCalls)
	}
}

// TestOneWordPerCache: every text of the page that speaks of a cache names
// which — the provider's prompt cache or the proxy's summary cache.
func TestOneWordPerCache(t *testing.T) {
	script, err := assets.ReadFile("assets/app.js")
	if err != nil {
		t.Fatal(err)
	}
	// Names in the code (cache_read, d.cache, fetch's cache option) are
	// not words on the page.
	code := regexp.MustCompile(`\w*cache_\w*|\.cache\b|cache: 'no-store'`)
	named := regexp.MustCompile(`(?i)(prompt[ -]cache|summary cache)`)
	for i, line := range strings.Split(string(script), "\n") {
		if rest := code.ReplaceAllString(line, ""); strings.Contains(strings.ToLower(rest), "cache") && !named.MatchString(rest) {
			t.Errorf("app.js:%d says cache without saying which: %s", i+1, strings.TrimSpace(line))
		}
	}
}

// TestDegradedReasonsGroupByEngineKind: a report that names its
// fallbacks' kinds (condense.Report.DegradedKinds) counts in its first
// one's row, with it: reasons alike in their words but of other kinds
// count apart, and a kind's reasons that differ in their details
// together.
func TestDegradedReasonsGroupByEngineKind(t *testing.T) {
	reports := []condense.Report{
		{Degraded: "agent compaction (claude-code) over the context window; forwarded unchanged", DegradedKinds: []string{condense.DegradedCompactionKept}},
		{Degraded: "agent compaction (codex) over the context window: 4 tool outputs digested, no summaries", DegradedKinds: []string{condense.DegradedCompactionDigested}},
		{Degraded: "agent compaction (claude-code) over the context window: 12 tool outputs digested, no summaries", DegradedKinds: []string{condense.DegradedCompactionDigested}},
		{Degraded: "summarizer failed: 502 Bad Gateway", DegradedKinds: []string{condense.DegradedSummarizerFailed}},
		{Degraded: "summarizer failed: context deadline exceeded; newest steps over budget; 3 of their tool outputs digested",
			DegradedKinds: []string{condense.DegradedSummarizerFailed, condense.DegradedNewestOverBudget}},
		{Degraded: "summarizer failed: 401"}, // no kinds: by its words alone
	}
	u := New(Options{Scope: scopeOf})
	for i, r := range reports {
		r.Counted, r.Conversation, r.Applied, r.TokensBefore, r.TokensAfter = true, fmt.Sprint("c", i), condense.AppliedFull, 10, 5
		u.Record(proxy.Event{Time: time.Now(), Scope: "s", Status: 200, Report: r})
	}
	var ov overviewResp
	call(t, u, "/ui/api/overview", loopback, &ov)
	got := map[string]int{}
	for _, r := range ov.Degraded {
		got[r.Kind+" / "+r.Reason] = r.Count
	}
	want := map[string]int{
		condense.DegradedCompactionKept + " / agent compaction":     1,
		condense.DegradedCompactionDigested + " / agent compaction": 2,
		condense.DegradedSummarizerFailed + " / summarizer failed":  2,
		" / summarizer failed": 1,
	}
	if !maps.Equal(got, want) {
		t.Errorf("rows %v, want %v", got, want)
	}
}

// TestDegradedReasonsGroupByKind: reasons that differ only in their
// numbers are one row; a long reason's kind is cut between words.
func TestDegradedReasonsGroupByKind(t *testing.T) {
	long := "auto's LLM summaries would cost about %d input tokens' worth, over its allowance of %.0f (condense.auto_llm_share of the conversation's bill so far); extractive summaries used"
	reasons := []string{
		fmt.Sprintf(long, 1234, 56.0),
		fmt.Sprintf(long, 98765, 4321.0),
		fmt.Sprintf(long, 7, 0.0),
		"newest steps over budget; 3 of their tool outputs digested",
		"newest steps over budget; 12 of their tool outputs digested",
		"summarizer failed: 502 Bad Gateway",
		"summarizer failed: context deadline exceeded",
		"message 12 of 40 shrunk to 1,024 tokens to fit",
		"message 3 of 9 shrunk to 512 tokens to fit",
	}
	u := New(Options{Scope: scopeOf})
	for i, r := range reasons {
		u.Record(proxy.Event{Time: time.Now(), Scope: "s", Status: 200, Report: condense.Report{
			Counted: true, Conversation: fmt.Sprint("c", i), Applied: condense.AppliedFull, TokensBefore: 10, TokensAfter: 5, Degraded: r}})
	}
	var ov overviewResp
	call(t, u, "/ui/api/overview", loopback, &ov)
	got := map[string]int{}
	for _, r := range ov.Degraded {
		got[r.Reason] = r.Count
	}
	want := map[string]int{
		"auto's LLM summaries would cost about N input tokens' worth, over its allowance…": 3,
		"newest steps over budget":                 2,
		"summarizer failed":                        2,
		"message N of N shrunk to N tokens to fit": 2,
	}
	if len(got) != len(want) {
		t.Fatalf("reasons %v, want %v", got, want)
	}
	for k, n := range want {
		if got[k] != n {
			t.Errorf("reason %q: %d, want %d (all: %v)", k, got[k], n, got)
		}
	}
	for k := range got {
		if len(strings.TrimSuffix(k, "…")) > maxReasonKind {
			t.Errorf("reason kind %q longer than %d bytes", k, maxReasonKind)
		}
	}
}
