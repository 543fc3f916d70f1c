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
	Access  string    `json:"access"`
	Version uint64    `json:"version"`
	Started time.Time `json:"started"`
	Now     time.Time `json:"now"`
	Totals  totals    `json:"totals"`
	// The estimated bill's figures, from Totals (null when nothing was
	// billed): the saving, 1 − bill / bill uncondensed; the share of the
	// tokens forwarded read from the prompt cache; and observe mode's
	// saving, 1 − would bill / bill as received (null when no request
	// was observed).
	BillSaving     *float64          `json:"bill_saving"`
	CacheReadShare *float64          `json:"cache_read_share"`
	ObserveSaving  *float64          `json:"observe_saving"`
	Outcomes       map[string]int64  `json:"outcomes"`
	Applied        map[string]int64  `json:"applied"`
	Modes          []modeJSON        `json:"modes"`
	Models         []modelJSON       `json:"models"`
	Degraded       []reasonJSON      `json:"degraded_reasons"`
	Minutes        []minuteJSON      `json:"minutes"`
	Conversations  int               `json:"conversations"` // kept and visible to the viewer
	Limits         map[string]int    `json:"limits"`
	Replica        map[string]string `json:"replica"`
	// KeepAlive is this replica's keep-alive pings; absent when off.
	KeepAlive *KeepAliveStats `json:"keepalive,omitempty"`
	// Holdout compares the holdout arm with the condensed one
	// (condense.holdout_share); absent until a request had an arm.
	Holdout *holdoutJSON `json:"holdout,omitempty"`
	// Measured is what the upstream's answers reported, beside the
	// estimate of the same requests.
	Measured measuredJSON `json:"measured"`
}

// measuredJSON is measured usage summed, with the estimate's error on
// it.
type measuredJSON struct {
	measuredSums
	// Input is the prompts' tokens in all (cache reads, writes and
	// uncached).
	Input int64 `json:"input"`
	// BillUSD is the measured bill in dollars, of the Priced requests;
	// null when no measured request has a price ("unknown price").
	BillUSD *usd `json:"bill_usd"`
	// EstimateError is the engine's count of the forwarded requests over
	// the prompts the provider counted (their first answers'), less 1;
	// BillError the estimated bill over the measured one, less 1 (0.1:
	// the estimate 10% over). Null when nothing was measured.
	EstimateError *float64 `json:"estimate_error"`
	BillError     *float64 `json:"bill_error"`
}

func measuredView(m measuredSums) measuredJSON {
	out := measuredJSON{measuredSums: m, Input: m.input()}
	if m.Priced > 0 {
		v := m.BillUSD
		out.BillUSD = &v
	}
	if m.FirstPrompt > 0 {
		f := float64(m.EstimatedInput)/float64(m.FirstPrompt) - 1
		out.EstimateError = &f
	}
	if m.Bill > 0 {
		f := float64(m.EstimatedBill)/float64(m.Bill) - 1
		out.BillError = &f
	}
	return out
}

// minArmConversations is the comparison's rule: with fewer conversations
// than this in either arm there is too little data to tell.
const minArmConversations = 10

// holdoutJSON compares the arms of condense.holdout_share: the
// conversations forwarded as received (holdout) and the condensed ones,
// by their estimated cost per conversation.
type holdoutJSON struct {
	Condensed armJSON `json:"condensed"`
	Holdout   armJSON `json:"holdout"`
	// MinConversations: below it in either arm, Enough is false, the
	// verdict says "too little data to tell" and Saving is null.
	MinConversations int    `json:"min_conversations"`
	Enough           bool   `json:"enough"`
	Verdict          string `json:"verdict"`
	// Saving is 1 − the condensed arm's estimated cost per conversation
	// / the holdout arm's (negative: condensing costs more).
	Saving *float64 `json:"saving"`
	// MeasuredSaving is the same from the measured cost per
	// conversation: null while either arm has none, or too little data.
	MeasuredSaving *float64 `json:"measured_saving"`
}

// armJSON is one arm: its sums and its cost per conversation.
type armJSON struct {
	armSums
	// CostPerConversation is in input tokens' worth (null: no
	// conversation yet); USDPerConversation in dollars, null when a
	// request of the arm has no known price ("unknown price").
	CostPerConversation *float64 `json:"cost_per_conversation"`
	USDPerConversation  *float64 `json:"usd_per_conversation"`
	// MeasuredCostPerConversation is the measured cost (the usage the
	// answers reported, at the model's prices, plus the summarizer's
	// estimated spend) per conversation, in input tokens' worth;
	// MeasuredUSDPerConversation in dollars. Null while no request of
	// the arm was measured, or one billed request's answers reported no
	// usage (NotReported); the dollars also while a request of the arm
	// has no known price.
	MeasuredCostPerConversation *float64 `json:"measured_cost_per_conversation"`
	MeasuredUSDPerConversation  *float64 `json:"measured_usd_per_conversation"`
}

func armView(a armSums) armJSON {
	out := armJSON{armSums: a}
	if a.Conversations > 0 {
		f := a.Cost.float() / float64(a.Conversations)
		out.CostPerConversation = &f
		if a.Priced == a.Requests {
			d := a.CostUSD.float() / float64(a.Conversations)
			out.USDPerConversation = &d
		}
		if a.Measured > 0 && a.NotReported == 0 {
			m := a.MeasuredCost.float() / float64(a.Conversations)
			out.MeasuredCostPerConversation = &m
			if a.Priced == a.Requests {
				d := a.MeasuredCostUSD.float() / float64(a.Conversations)
				out.MeasuredUSDPerConversation = &d
			}
		}
	}
	return out
}

// holdoutView compares the arms; nil when no request had one.
func holdoutView(arms [2]armSums) *holdoutJSON {
	c, h := arms[armCondensed], arms[armHoldout]
	if c.Requests == 0 && h.Requests == 0 {
		return nil
	}
	out := &holdoutJSON{Condensed: armView(c), Holdout: armView(h), MinConversations: minArmConversations}
	out.Enough = c.Conversations >= minArmConversations && h.Conversations >= minArmConversations
	if !out.Enough {
		out.Verdict = fmt.Sprintf("too little data to tell: fewer than %d conversations in an arm (condensed %d, holdout %d)",
			minArmConversations, c.Conversations, h.Conversations)
		return out
	}
	cc, hc := *out.Condensed.CostPerConversation, *out.Holdout.CostPerConversation
	if hc <= 0 {
		out.Verdict = "the holdout conversations cost nothing yet (no request billed)"
		return out
	}
	f := 1 - cc/hc
	out.Saving = &f
	if f >= 0 {
		out.Verdict = fmt.Sprintf("condensed conversations cost %.1f%% less than the holdout's (estimated, per conversation)", 100*f)
	} else {
		out.Verdict = fmt.Sprintf("condensed conversations cost %.1f%% more than the holdout's (estimated, per conversation)", -100*f)
	}
	mc, mh := out.Condensed.MeasuredCostPerConversation, out.Holdout.MeasuredCostPerConversation
	switch {
	case mc == nil || mh == nil:
		out.Verdict += "; measured: not reported in both arms"
	case *mh > 0:
		m := 1 - *mc / *mh
		out.MeasuredSaving = &m
		if m >= 0 {
			out.Verdict += fmt.Sprintf("; measured: %.1f%% less", 100*m)
		} else {
			out.Verdict += fmt.Sprintf("; measured: %.1f%% more", -100*m)
		}
	}
	return out
}

// KeepAliveStats is what the overview shows of the keep-alive pings
// (package keepalive's counts).
type KeepAliveStats struct {
	Pings      uint64 `json:"pings"`       // sent and answered
	PingWrites uint64 `json:"ping_writes"` // that found the cache gone
	PingErrors uint64 `json:"ping_errors"`
	CacheRead  uint64 `json:"cache_read"` // cache-read tokens the pings bought
	// PingCost, Avoided and NetSaving are in input-token equivalents:
	// the pings' cost, the re-writes they avoided, the difference.
	PingCost  float64 `json:"ping_cost"`
	Avoided   float64 `json:"avoided"`
	NetSaving float64 `json:"net_saving"`
	Armed     int     `json:"armed"` // conversations with a ping scheduled
}

// ShowKeepAlive makes the overview show the keep-alive pings' counts,
// read from stats at every request of the overview.
func (u *UI) ShowKeepAlive(stats func() KeepAliveStats) {
	u.st.mu.Lock()
	u.st.keepAlive = stats
	u.st.mu.Unlock()
}

type modeJSON struct {
	Mode string `json:"mode"`
	modeCounts
}

type modelJSON struct {
	Model string `json:"model"`
	modelCounts
	BillSaving     *float64 `json:"bill_saving"`
	CacheReadShare *float64 `json:"cache_read_share"`
}

type reasonJSON struct {
	Reason string `json:"reason"`
	Kind   string `json:"kind,omitempty"` // the engine's fallback kind (condense.Degraded*)
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
	// The estimated bill of all its requests, kept or not, in units of
	// the input price, and observe mode's (Observed requests, what auto
	// would have billed for them).
	Bill            inputs   `json:"bill"`
	BillUncondensed inputs   `json:"bill_uncondensed"`
	BillSaving      *float64 `json:"bill_saving"`
	Observed        int64    `json:"observed"`
	ObserveBill     inputs   `json:"observe_bill"`
	WouldBill       inputs   `json:"would_bill"`
	ObserveSaving   *float64 `json:"observe_saving"`
	// The bills in dollars, each request's at its model's input price;
	// null when none of its requests has a price ("unknown price").
	// Unpriced counts the requests whose model has none (their bills are
	// in no dollar figure).
	BillUSD            *usd  `json:"bill_usd"`
	BillUncondensedUSD *usd  `json:"bill_uncondensed_usd"`
	Unpriced           int64 `json:"unpriced"`
	// Arm is the conversation's arm (condense.holdout_share): holdout
	// or condensed; absent without one.
	Arm string `json:"arm,omitempty"`
	// Measured is what the upstream's answers reported of all its
	// requests, beside the estimate.
	Measured measuredJSON `json:"measured"`
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
	// AgentCompaction names the agent when the request was its own
	// compaction request, forwarded without summaries.
	AgentCompaction string `json:"agent_compaction,omitempty"`
	// The estimated bill (condense.Report): tokens read from the prompt
	// cache and written, the bill and the bill had the conversation never
	// been condensed, in units of the input price.
	CacheRead       int     `json:"cache_read"`
	CacheWrite      int     `json:"cache_write"`
	Bill            float64 `json:"bill"`
	BillUncondensed float64 `json:"bill_uncondensed"`
	// InputPrice is the model's input price, USD per million tokens, and
	// BillUSD the bill at it; both absent when the price is unknown.
	InputPrice float64 `json:"input_price,omitempty"`
	BillUSD    *usd    `json:"bill_usd,omitempty"`
	// Recalls counts the condense_recall calls the proxy answered.
	Recalls int `json:"recalls,omitempty"`
	// Measured is what the upstream's answers reported; absent when
	// nothing was measured (the request was not billed).
	Measured *requestMeasuredJSON `json:"measured,omitempty"`
	// Observe mode (applied "observe"): what auto would have applied and
	// forwarded, and that request's bill.
	WouldApply       string  `json:"would_apply,omitempty"`
	WouldTokensAfter int     `json:"would_tokens_after,omitempty"`
	WouldBill        float64 `json:"would_bill,omitempty"`
	WouldCacheRead   int     `json:"would_cache_read,omitempty"`
	WouldCacheWrite  int     `json:"would_cache_write,omitempty"`
}

// requestMeasuredJSON is one request's measured usage: Reported false
// ("not reported") when its answers said nothing of it, and nothing else
// set.
type requestMeasuredJSON struct {
	Reported     bool    `json:"reported"`
	Input        int     `json:"input,omitempty"` // the prompts' tokens in all
	CacheRead    int     `json:"cache_read,omitempty"`
	CacheWrite   int     `json:"cache_write,omitempty"`
	CacheWrite1h int     `json:"cache_write_1h,omitempty"`
	Uncached     int     `json:"uncached,omitempty"`
	Output       int     `json:"output,omitempty"`
	Bill         float64 `json:"bill,omitempty"` // in units of the input price
	BillUSD      *usd    `json:"bill_usd,omitempty"`
	// Answers is the upstream answers read: 1 plus the recall rounds.
	Answers int `json:"answers,omitempty"`
	// EstimateError is tokens_forwarded over the first answer's
	// prompt, less 1.
	EstimateError *float64 `json:"estimate_error,omitempty"`
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
	Path           []string             `json:"path,omitempty"`            // the reason as data (condense.Path*), no content
	DegradedKinds  []string             `json:"degraded_kinds,omitempty"`  // the fallbacks (condense.Degraded*), no content
	Changes        []changeJSON         `json:"changes"`
	Received       []condense.ItemShape `json:"received"`
	Forwarded      []condense.ItemShape `json:"forwarded"` // nil: as received
	Recalls        []recallJSON         `json:"recall_calls,omitempty"`
}

// recallJSON is one condense_recall call the proxy answered.
type recallJSON struct {
	Outcome string   `json:"outcome"`
	Query   string   `json:"query,omitempty"`  // content
	ID      string   `json:"id,omitempty"`     // content
	Items   []string `json:"items,omitempty"`  // content
	Answer  string   `json:"answer,omitempty"` // content
	Count   int      `json:"count"`            // items returned
}

// originalsPath is where the page opens the originals behind change id of
// c: the page's own endpoint when the UI has the originals (any viewer
// that may read c's content, an admin key included), else the proxy's,
// which answers only c's own key.
func (u *UI) originalsPath(c *conversation, id string) string {
	if u.opts.Originals != nil {
		return "/ui/api/conversations/" + c.id + "/originals/" + url.PathEscape(id)
	}
	return "/v1/condense/originals/" + url.PathEscape(id)
}

// maxOriginalsID bounds an originals id asked for (they are hex hashes).
const maxOriginalsID = 128

// originals answers the originals behind a change of a conversation on
// the page, read in that conversation's caller scope: for a viewer that
// may read the conversation's content (its own key, or an admin key —
// the one way an admin reads originals of another caller's scope).
// Numbers-only viewers get 403; a conversation not shown to the viewer,
// or originals gone (originals_ttl) or never kept, 404.
func (u *UI) originals(w http.ResponseWriter, r *http.Request) {
	v, ok := u.authorize(w, r)
	if !ok {
		return
	}
	id := r.PathValue("oid")
	if id == "" || len(id) > maxOriginalsID {
		writeJSONError(w, http.StatusBadRequest, "no originals id, or one too long")
		return
	}
	s := u.st
	s.mu.Lock()
	c := s.byID[r.PathValue("id")]
	seen, content, scope := c != nil && v.sees(c), c != nil && v.content(c), ""
	if content {
		scope = c.key.scope
	}
	s.mu.Unlock()
	switch {
	case !seen:
		writeJSONError(w, http.StatusNotFound, "no such conversation (never seen, dropped, or another caller's)")
		return
	case !content:
		writeJSONError(w, http.StatusForbidden, "the originals need the conversation's key or an admin key (ui.keys)")
		return
	case u.opts.Originals == nil:
		writeJSONError(w, http.StatusNotFound, "no originals store")
		return
	}
	b, ok := u.opts.Originals.Originals(r.Context(), scope, id)
	if !ok || !json.Valid(b) {
		writeJSONError(w, http.StatusNotFound, "no originals under that id (expired after originals_ttl, or never kept)")
		return
	}
	writeJSON(w, struct {
		ID       string          `json:"id"`
		Messages json.RawMessage `json:"messages"`
	}{id, b})
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
		Access:         v.access.String(),
		Version:        s.version,
		Started:        s.started,
		Now:            now,
		Totals:         s.tot,
		Outcomes:       map[string]int64{},
		Applied:        map[string]int64{},
		BillSaving:     saving(s.tot.Bill, s.tot.BillUncondensed),
		CacheReadShare: share(s.tot.CacheRead, s.tot.TokensForwarded),
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
		out.Models = append(out.Models, modelJSON{Model: model, modelCounts: *mc,
			BillSaving: saving(mc.Bill, mc.BillUncondensed), CacheReadShare: share(mc.CacheRead, mc.TokensForwarded)})
	}
	for key, n := range s.degraded {
		kind, reason := splitKey(key)
		out.Degraded = append(out.Degraded, reasonJSON{Reason: reason, Kind: kind, Count: n})
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
	if o := s.tot.Observe; o.Requests > 0 {
		out.ObserveSaving = saving(o.WouldBill, o.Bill)
	}
	out.Holdout = holdoutView(s.tot.Arms)
	out.Measured = measuredView(s.tot.Measured)
	keepAlive := s.keepAlive
	s.mu.Unlock()
	if keepAlive != nil {
		ka := keepAlive()
		out.KeepAlive = &ka
	}

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
		out.Path, out.DegradedKinds = d.path, d.degradedKinds
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
					cj.Originals = u.originalsPath(c, ch.ID)
				}
			}
			out.Changes = append(out.Changes, cj)
		}
		for _, rc := range d.recalls {
			rj := recallJSON{Outcome: rc.Outcome, Count: len(rc.Items)}
			if content {
				rj.Query, rj.ID, rj.Items, rj.Answer = rc.Query, rc.ID, rc.Items, rc.Answer
			}
			out.Recalls = append(out.Recalls, rj)
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
		Bill: c.bill.Bill, BillUncondensed: c.bill.BillUncondensed, BillSaving: saving(c.bill.Bill, c.bill.BillUncondensed),
		Observed: c.observed.Requests, ObserveBill: c.observed.Bill, WouldBill: c.observed.WouldBill,
		BillUSD: c.bill.usdOf(false), BillUncondensedUSD: c.bill.usdOf(true), Unpriced: c.bill.Unpriced, Arm: c.arm,
		Measured: measuredView(c.measured),
	}
	if c.observed.Requests > 0 {
		cj.ObserveSaving = saving(c.observed.WouldBill, c.observed.Bill)
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
	var bill *usd
	if r.price > 0 {
		v := dollars(inputsOf(r.bill), r.price)
		bill = &v
	}
	var measured *requestMeasuredJSON
	if m := r.measured; m != nil {
		measured = &requestMeasuredJSON{Reported: m.Reported}
		if m.Reported {
			u := m.Usage
			measured.Input, measured.CacheRead, measured.CacheWrite, measured.CacheWrite1h = u.Prompt(), u.CacheRead, u.CacheWrite, u.CacheWrite1h
			measured.Uncached, measured.Output, measured.Bill, measured.Answers = u.Uncached, u.Output, m.Bill, m.Answers
			if r.price > 0 {
				v := dollars(inputsOf(m.Bill), r.price)
				measured.BillUSD = &v
			}
			if m.FirstPrompt > 0 && r.after > 0 {
				f := float64(r.after)/float64(m.FirstPrompt) - 1
				measured.EstimateError = &f
			}
		}
	}
	return requestJSON{
		InputPrice: r.price, BillUSD: bill, Measured: measured,
		N: r.n, Time: r.time, Status: r.status, DurationMS: float64(r.duration.Microseconds()) / 1000,
		Mode: r.mode, Applied: r.applied, Outcome: r.outcome,
		TokensReceived: r.before, TokensForwarded: r.after, Window: r.window, Trigger: r.trigger,
		Messages: r.messages, SummarizerCalls: r.calls, PrefixReused: r.prefix,
		Summaries: r.summaries, Digests: r.digests, Windows: r.windows, New: r.fresh,
		Degraded: r.degraded, Detail: r.detail != nil, AgentCompaction: r.compaction,
		CacheRead: r.cacheRead, CacheWrite: r.cacheWrite, Bill: r.bill, BillUncondensed: r.billUncondensed,
		Recalls: r.recalls, WouldApply: r.wouldApply, WouldTokensAfter: r.wouldAfter, WouldBill: r.wouldBill,
		WouldCacheRead: r.wouldRead, WouldCacheWrite: r.wouldWrite,
	}
}

// saving is 1 − bill/base: the share of base that bill saves (negative
// when it costs more); nil when base is not positive.
func saving(bill, base inputs) *float64 {
	if base <= 0 {
		return nil
	}
	f := 1 - float64(bill)/float64(base)
	return &f
}

// share is part/whole; nil when whole is not positive.
func share(part, whole int64) *float64 {
	if whole <= 0 {
		return nil
	}
	f := float64(part) / float64(whole)
	return &f
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
