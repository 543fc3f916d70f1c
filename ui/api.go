package ui

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/condense-proxy/condense-proxy/condense"
)

// The JSON the page reads. Fields marked "content" are left out for a
// viewer that may not read the conversation.

type overviewJSON struct {
	Access        string            `json:"access"`
	Version       uint64            `json:"version"`
	Started       time.Time         `json:"started"`
	Now           time.Time         `json:"now"`
	Totals        totals            `json:"totals"`
	Outcomes      map[string]int64  `json:"outcomes"`
	Applied       map[string]int64  `json:"applied"`
	Modes         []modeJSON        `json:"modes"`
	Models        []modelJSON       `json:"models"`
	Degraded      []reasonJSON      `json:"degraded_reasons"`
	Minutes       []minuteJSON      `json:"minutes"`
	Conversations int               `json:"conversations"` // kept and visible to the viewer
	Limits        map[string]int    `json:"limits"`
	Replica       map[string]string `json:"replica"`
}

type modeJSON struct {
	Mode string `json:"mode"`
	modeCounts
}

type modelJSON struct {
	Model string `json:"model"`
	modelCounts
}

type reasonJSON struct {
	Reason string `json:"reason"`
	Count  int    `json:"count"`
}

type minuteJSON struct {
	Time      int64 `json:"t"` // unix seconds of the minute's start
	Requests  int64 `json:"requests"`
	Condensed int64 `json:"condensed"`
	Received  int64 `json:"received"`
	Forwarded int64 `json:"forwarded"`
}

type convJSON struct {
	ID              string    `json:"id"`
	Content         bool      `json:"content"`
	Identified      bool      `json:"identified"` // the engine named the conversation
	Caller          string    `json:"caller,omitempty"`
	UserAgent       string    `json:"user_agent,omitempty"`
	Model           string    `json:"model"`
	Format          string    `json:"format,omitempty"`
	First           time.Time `json:"first"`
	Last            time.Time `json:"last"`
	Requests        int       `json:"requests"` // seen, including those no longer kept
	Kept            int       `json:"kept"`
	Condensed       int       `json:"condensed"`
	Degraded        int       `json:"degraded"`
	TokensReceived  int       `json:"tokens_received"` // of the latest request
	TokensForwarded int       `json:"tokens_forwarded"`
	Window          int       `json:"window"`
	Trigger         int       `json:"trigger"`
	Mode            string    `json:"mode"`
	Applied         string    `json:"applied"`
}

type requestJSON struct {
	N               int       `json:"n"`
	Time            time.Time `json:"time"`
	Status          int       `json:"status"`
	DurationMS      float64   `json:"duration_ms"`
	Mode            string    `json:"mode"`
	Applied         string    `json:"applied"`
	Outcome         string    `json:"outcome"`
	TokensReceived  int       `json:"tokens_received"`
	TokensForwarded int       `json:"tokens_forwarded"`
	Window          int       `json:"window"`
	Trigger         int       `json:"trigger"`
	Messages        int       `json:"messages"`
	SummarizerCalls int       `json:"summarizer_calls"`
	PrefixReused    int       `json:"prefix_reused"` // -1: not known
	Summaries       int       `json:"summaries"`
	Digests         int       `json:"digests"`
	Windows         int       `json:"windows"`
	New             [3]int    `json:"new"` // summaries, digests, windows not in the previous request
	Degraded        bool      `json:"degraded"`
	Detail          bool      `json:"detail"` // the detail view is available
}

type changeJSON struct {
	Kind         string `json:"kind"`
	ID           string `json:"id,omitempty"` // content
	Level        int    `json:"level,omitempty"`
	From         int    `json:"from"`
	To           int    `json:"to"`
	Tool         string `json:"tool,omitempty"` // content
	TokensBefore int    `json:"tokens_before"`
	TokensAfter  int    `json:"tokens_after"`
	Text         string `json:"text,omitempty"`      // content
	Originals    string `json:"originals,omitempty"` // content: the originals endpoint
}

type detailJSON struct {
	requestJSON
	Reason         string               `json:"reason"` // its first clause only, without content
	Summaries      string               `json:"summary_levels,omitempty"`
	Cache          string               `json:"cache,omitempty"`
	DegradedReason string               `json:"degraded_reason,omitempty"` // content
	Changes        []changeJSON         `json:"changes"`
	Received       []condense.ItemShape `json:"received"`
	Forwarded      []condense.ItemShape `json:"forwarded"` // nil: as received
}

// authorize returns the viewer, or answers 401 and returns false.
func (u *UI) authorize(w http.ResponseWriter, r *http.Request) (viewer, bool) {
	v := u.viewerOf(r)
	if v.access == accessNone {
		writeJSONError(w, http.StatusUnauthorized, "an accepted key is needed (Authorization: Bearer KEY)")
		return v, false
	}
	return v, true
}

func (u *UI) overview(w http.ResponseWriter, r *http.Request) {
	v, ok := u.authorize(w, r)
	if !ok {
		return
	}
	now := u.now()
	s := u.st
	s.mu.Lock()
	out := overviewJSON{
		Access:   v.access.String(),
		Version:  s.version,
		Started:  s.started,
		Now:      now,
		Totals:   s.tot,
		Outcomes: map[string]int64{},
		Applied:  map[string]int64{},
		Limits: map[string]int{
			"max_conversations":             s.maxConvs,
			"max_requests_per_conversation": s.maxReqs,
		},
	}
	for mode, mc := range s.modes {
		c := *mc
		c.Applied = make(map[string]int64, len(mc.Applied))
		for k, n := range mc.Applied {
			c.Applied[k] = n
			out.Applied[k] += n
		}
		out.Modes = append(out.Modes, modeJSON{Mode: mode, modeCounts: c})
		out.Outcomes[outcomeCondensed] += c.Condensed
		out.Outcomes[outcomeUnchanged] += c.Unchanged
		out.Outcomes[outcomePassed] += c.Passed
		out.Outcomes[outcomeNotCounted] += c.NotCounted
	}
	for model, mc := range s.models {
		out.Models = append(out.Models, modelJSON{Model: model, modelCounts: *mc})
	}
	for reason, n := range s.degraded {
		out.Degraded = append(out.Degraded, reasonJSON{Reason: reason, Count: n})
	}
	cur := now.Unix() / 60
	for m := cur - minutes + 1; m <= cur; m++ {
		b := s.minute[((m%minutes)+minutes)%minutes]
		mj := minuteJSON{Time: m * 60}
		if b.minute == m {
			mj.Requests, mj.Condensed, mj.Received, mj.Forwarded = b.requests, b.condensed, b.received, b.forwarded
		}
		out.Minutes = append(out.Minutes, mj)
	}
	for e := s.lru.Front(); e != nil; e = e.Next() {
		if v.sees(e.Value.(*conversation)) {
			out.Conversations++
		}
	}
	s.mu.Unlock()

	sort.Slice(out.Modes, func(i, j int) bool { return out.Modes[i].Mode < out.Modes[j].Mode })
	sort.Slice(out.Models, func(i, j int) bool {
		if out.Models[i].Requests != out.Models[j].Requests {
			return out.Models[i].Requests > out.Models[j].Requests
		}
		return out.Models[i].Model < out.Models[j].Model
	})
	sort.Slice(out.Degraded, func(i, j int) bool {
		if out.Degraded[i].Count != out.Degraded[j].Count {
			return out.Degraded[i].Count > out.Degraded[j].Count
		}
		return out.Degraded[i].Reason < out.Degraded[j].Reason
	})
	out.Replica = map[string]string{"note": "this replica's record only: each replica keeps its own"}
	writeJSON(w, out)
}

func (u *UI) conversations(w http.ResponseWriter, r *http.Request) {
	v, ok := u.authorize(w, r)
	if !ok {
		return
	}
	list := []convJSON{}
	s := u.st
	s.mu.Lock()
	for e := s.lru.Front(); e != nil; e = e.Next() {
		c := e.Value.(*conversation)
		if v.sees(c) {
			list = append(list, s.convView(c, v))
		}
	}
	s.mu.Unlock()
	// The LRU is by activity; newest first is the same order, stated.
	sort.SliceStable(list, func(i, j int) bool { return list[i].Last.After(list[j].Last) })
	writeJSON(w, map[string]any{"access": v.access.String(), "conversations": list})
}

func (u *UI) conversation(w http.ResponseWriter, r *http.Request) {
	v, ok := u.authorize(w, r)
	if !ok {
		return
	}
	s := u.st
	s.mu.Lock()
	c := s.byID[r.PathValue("id")]
	if c == nil || !v.sees(c) {
		s.mu.Unlock()
		writeJSONError(w, http.StatusNotFound, "no such conversation (never seen, dropped, or another caller's)")
		return
	}
	cv := s.convView(c, v)
	reqs := make([]requestJSON, 0, len(c.rows))
	for n := c.total - len(c.rows) + 1; n <= c.total; n++ {
		reqs = append(reqs, rowView(s.row(c, n)))
	}
	s.mu.Unlock()
	writeJSON(w, map[string]any{"access": v.access.String(), "conversation": cv, "requests": reqs})
}

func (u *UI) request(w http.ResponseWriter, r *http.Request) {
	v, ok := u.authorize(w, r)
	if !ok {
		return
	}
	n, err := strconv.Atoi(r.PathValue("n"))
	if err != nil {
		writeJSONError(w, http.StatusBadRequest, "request number is not a number")
		return
	}
	s := u.st
	s.mu.Lock()
	c := s.byID[r.PathValue("id")]
	if c == nil || !v.sees(c) {
		s.mu.Unlock()
		writeJSONError(w, http.StatusNotFound, "no such conversation (never seen, dropped, or another caller's)")
		return
	}
	rw := s.row(c, n)
	if rw == nil {
		s.mu.Unlock()
		writeJSONError(w, http.StatusNotFound, "request no longer kept")
		return
	}
	out := detailJSON{requestJSON: rowView(rw), Changes: []changeJSON{}}
	content := v.content(c)
	if d := rw.detail; d != nil {
		out.Reason, out.Summaries, out.Cache = d.reason, d.summaries, d.cache
		if content {
			out.DegradedReason = d.degraded
		} else {
			// The reason's later clauses can carry error texts.
			out.Reason, _, _ = strings.Cut(d.reason, ";")
		}
		for _, ch := range d.changes {
			cj := changeJSON{Kind: ch.Kind, Level: ch.Level, From: ch.From, To: ch.To,
				TokensBefore: ch.TokensBefore, TokensAfter: ch.TokensAfter}
			if content {
				cj.ID, cj.Tool, cj.Text = ch.ID, ch.Tool, ch.Text
				if ch.ID != "" {
					cj.Originals = "/v1/condense/originals/" + url.PathEscape(ch.ID)
				}
			}
			out.Changes = append(out.Changes, cj)
		}
		// The shapes are never changed once kept: sharing them is safe.
		out.Received, out.Forwarded = d.received, d.forwarded
	}
	s.mu.Unlock()
	writeJSON(w, map[string]any{"access": v.access.String(), "content": content, "request": out})
}

// events streams "update" events carrying the record's version, at most
// one a second, and a comment every 15 s to keep proxies from closing an
// idle stream.
func (u *UI) events(w http.ResponseWriter, r *http.Request) {
	if _, ok := u.authorize(w, r); !ok {
		return
	}
	rc := http.NewResponseController(w)
	if u.streams.Add(1) > maxStreams {
		u.streams.Add(-1)
		writeJSONError(w, http.StatusServiceUnavailable, "too many event streams; poll instead")
		return
	}
	defer u.streams.Add(-1)
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	fmt.Fprint(w, "retry: 3000\n\n")
	flush := func() bool { return rc.Flush() == nil }

	heartbeat := time.NewTicker(15 * time.Second)
	defer heartbeat.Stop()
	var sent uint64
	first := true
	for {
		ver, changed := u.st.watch()
		if first || ver != sent {
			first = false
			sent = ver
			if _, err := fmt.Fprintf(w, "event: update\ndata: {\"version\":%d}\n\n", ver); err != nil || !flush() {
				return
			}
			// Coalesce: at most one update a second.
			select {
			case <-time.After(time.Second):
				continue
			case <-r.Context().Done():
				return
			case <-u.done:
				return
			}
		}
		select {
		case <-changed:
		case <-heartbeat.C:
			if _, err := fmt.Fprint(w, ": ping\n\n"); err != nil || !flush() {
				return
			}
		case <-r.Context().Done():
			return
		case <-u.done:
			return
		}
	}
}

// convView is c as v may see it. s.mu is held.
func (s *store) convView(c *conversation, v viewer) convJSON {
	cj := convJSON{
		ID: c.id, Content: v.content(c), Identified: c.key.conv != "",
		Model: c.model, Format: c.format, First: c.first, Last: c.last,
		Requests: c.total, Kept: len(c.rows), Condensed: c.condensed, Degraded: c.degraded,
	}
	if cj.Content {
		cj.UserAgent = c.userAgent
		cj.Caller = c.caller
	}
	if last := s.row(c, c.total); last != nil {
		cj.TokensReceived, cj.TokensForwarded = last.before, last.after
		cj.Window, cj.Trigger = last.window, last.trigger
		cj.Mode, cj.Applied = last.mode, last.applied
	}
	return cj
}

func rowView(r *row) requestJSON {
	return requestJSON{
		N: r.n, Time: r.time, Status: r.status, DurationMS: float64(r.duration.Microseconds()) / 1000,
		Mode: r.mode, Applied: r.applied, Outcome: r.outcome,
		TokensReceived: r.before, TokensForwarded: r.after, Window: r.window, Trigger: r.trigger,
		Messages: r.messages, SummarizerCalls: r.calls, PrefixReused: r.prefix,
		Summaries: r.summaries, Digests: r.digests, Windows: r.windows, New: r.fresh,
		Degraded: r.degraded, Detail: r.detail != nil,
	}
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	enc := json.NewEncoder(w)
	enc.Encode(v)
}

func writeJSONError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]string{"error": msg})
}
