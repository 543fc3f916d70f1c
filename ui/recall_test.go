package ui

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/condense-proxy/condense-proxy/memory"
)

// TestRecalls: the proxy's recall answers show in the overview's totals,
// in the request's row and, to whoever sees the conversation's content,
// in its detail (what was asked and what came back).
func TestRecalls(t *testing.T) {
	u := New(Options{Scope: scopeOf, AuthKeys: []string{"ka"}})
	evs := session(bearer("ka"), "conv-r", "claude-sonnet-4-5", "agent/1", time.Now().Add(-time.Hour), 3)
	evs[2].Recalls = []memory.Recalled{
		{Query: "deploy token", Outcome: memory.OutcomeFound, Items: []string{"aaaa", "bbbb"}, Answer: "condense_recall: 2 result(s) … ZEBRA-9931"},
		{ID: "deadbeef", Outcome: memory.OutcomeUnknown, Answer: "condense_recall: nothing under id deadbeef"},
	}
	record(u, evs)

	var ov overviewResp
	call(t, u, "/ui/api/overview", remote, &ov, "Authorization: Bearer ka")
	if ov.Totals.Recalls != 2 {
		t.Errorf("overview recalls %d, want 2", ov.Totals.Recalls)
	}
	var list listResp
	call(t, u, "/ui/api/conversations", remote, &list, "Authorization: Bearer ka")
	if len(list.Conversations) != 1 {
		t.Fatalf("%d conversations", len(list.Conversations))
	}
	var d detailResp
	path := fmt.Sprintf("/ui/api/conversations/%s/requests/3", list.Conversations[0].ID)
	if w := call(t, u, path, remote, &d, "Authorization: Bearer ka"); w.Code != 200 {
		t.Fatalf("detail: %d %s", w.Code, w.Body)
	}
	rc := d.Request.Recalls
	if d.Request.requestJSON.Recalls != 2 || len(rc) != 2 || rc[0].Query != "deploy token" || rc[0].Count != 2 ||
		!strings.Contains(rc[0].Answer, "ZEBRA-9931") || rc[1].ID != "deadbeef" || rc[1].Outcome != memory.OutcomeUnknown {
		t.Errorf("detail recalls: %+v", d.Request)
	}
	// Another caller's key does not see them.
	u2 := New(Options{Scope: scopeOf, AuthKeys: []string{"ka", "kb"}})
	record(u2, evs)
	call(t, u2, "/ui/api/conversations", remote, &list, "Authorization: Bearer kb")
	if len(list.Conversations) != 0 {
		t.Errorf("another caller sees %d conversations", len(list.Conversations))
	}
}
