// Package replay sends a recorded session through a running proxy turn by
// turn, as the agent did — request k is the history up to the k-th
// assistant message — and measures what the proxy forwarded.
//
// It is shared by the condensing tests and the evaluation command. The
// upstream must be an internal/fakeupstream server, whose record of what it
// received is the ground truth for the measurements.
package replay

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/tidwall/gjson"

	"github.com/condense-proxy/condense-proxy/codec/chat"
	"github.com/condense-proxy/condense-proxy/internal/corpus"
	"github.com/condense-proxy/condense-proxy/internal/fakeupstream"
	"github.com/condense-proxy/condense-proxy/tokenizer"
	"github.com/condense-proxy/condense-proxy/view"
)

// Options configures one replay.
type Options struct {
	ProxyURL string // base URL of the proxy
	Model    string
	Mode     string // X-Condense-Mode
	APIKey   string // sent as Authorization: Bearer …
	Window   int    // the model's window, for the report
	// Every sends only every n-th request (1: all). Default 1.
	Every int
	// Client sends the requests. Nil: http.DefaultClient.
	Client *http.Client
	// Facts are checked in every condensed request: each fact present in
	// what the agent sent should be present in what was forwarded.
	Facts []corpus.Fact
	// KindFacts are checked like Facts but counted in FactsByKind (and
	// probed) only, not in the totals (FactsSeen, FactsKept,
	// FactsByApplied): facts a report shows apart.
	KindFacts []corpus.Fact
	// Before, if set, is called before request i is sent (fault tests stop
	// and start things there).
	Before func(i int)
	// Drain, if set, is called after the last request so background work
	// (summaries prepared ahead) finishes before summarizer calls are
	// counted.
	Drain func()
	// DrainEach calls Drain after every request too, as an agent's turn
	// (the model's answer, the tools it runs) gives the proxy's background
	// work time to finish before the next request: summaries prepared
	// ahead are then ready when the request that needs them arrives, and
	// a replay is the same from one run to the next (back to back, which
	// of a prepared summary and one asked in place is cached first
	// depends on timing).
	DrainEach bool
	// Recall, if set, searches the replayed conversation's memory as the
	// recall tool does (memory.Memory.Search) for query and returns the
	// texts of its RecallTop best results that are steps (condensed-away
	// originals), best first. Each fact condensed away is probed once,
	// after the request that first dropped it (and the proxy's background
	// work) — see Result.RecallProbes.
	Recall func(ctx context.Context, query string) []string
}

// Request is the measurement of one replayed request.
type Request struct {
	Messages     int
	Status       int
	Applied      string
	TokensSent   int // by the agent (the proxy's count, header)
	TokensFwd    int // forwarded (the proxy's count, header)
	Latency      time.Duration
	HeadVerbatim bool
	LastVerbatim bool
	PrefixKept   float64 // share of the previous forwarded messages kept as identical prefix; -1 for the first
	Degraded     string
	Cache        string // X-Condense-Cache
	Cold         bool   // X-Condense-Cold: condensed as a cold turn
	FwdCounted   int    // tokens of the forwarded body, counted here
	// CachedTokens is how many leading tokens of the forwarded body were
	// identical to the previous forwarded request (its parts outside the
	// messages and its leading messages): what a provider's prompt cache
	// can serve. 0 for the first request.
	CachedTokens int
	// CountTokens is the proxy's answer to /v1/messages/count_tokens for
	// the same body (Messages replays; 0 otherwise).
	CountTokens int `json:",omitempty"`
}

// Result is the measurement of a replayed session.
type Result struct {
	Session string
	Mode    string
	Format  string `json:",omitempty"` // FormatMessages, FormatResponses; empty: chat
	// Messages replays: count_tokens answers checked, those different from
	// the forwarded count, and the largest relative difference.
	CountTokensChecked, CountTokensOff int     `json:",omitempty"`
	CountTokensMaxDiff                 float64 `json:",omitempty"`
	Requests                           []Request
	Rejected                           int // requests the upstream answered with an error
	MaxForwarded                       int // largest forwarded request, tokens (counted here)
	SentTokens                         int // sum over requests, as the agent sent them
	ForwardedTokens                    int
	SummarizerCalls                    int
	SummarizerTokensIn                 int
	SummarizerTokensOut                int // of the answers
	// SummarizerTokensCached are the summarizer's input tokens a provider
	// would read from its cache: the leading items of calls asked in place
	// identical to a request forwarded before them; SummarizerTokensInPlace
	// the rest of those calls (both are in SummarizerTokensIn).
	SummarizerTokensCached, SummarizerTokensInPlace int
	ContentTokens                                   int // tokens of the session's messages, counted once
	PrefixStability                                 float64
	LatencyP50                                      time.Duration
	LatencyP99                                      time.Duration
	// Facts: over condensed requests, facts present in the sent request
	// (FactsSeen) and still present in the forwarded one (FactsKept); the
	// same split by the X-Condense-Applied of the request.
	FactsSeen, FactsKept int
	FactsByApplied       map[string][2]int `json:",omitempty"` // applied -> {seen, kept}
	// FactsByKind splits FactsSeen and FactsKept by the facts' kind
	// (corpus.Fact.Kind), with the recall probes of each kind.
	FactsByKind map[string]FactCount `json:",omitempty"`
	// RecallProbes counts the distinct facts condensed away (present in a
	// condensed request as sent, absent from it as forwarded) that were
	// probed through Options.Recall; RecallTop3 those for which a step
	// holding the fact was among the search's RecallTop best results.
	RecallProbes, RecallTop3 int
	// Lost lists a few facts that were dropped, for diagnosis.
	Lost []string `json:",omitempty"`
	// Unrecalled lists a few probes that missed: the fact, then the query.
	Unrecalled []string `json:",omitempty"`

	probed  map[string]bool // facts probed or waiting, by kind and text
	pending []corpus.Fact   // facts condensed away, not probed yet
}

// FactRetention is FactsKept / FactsSeen (1 when no fact was at stake).
func (r *Result) FactRetention() float64 {
	if r.FactsSeen == 0 {
		return 1
	}
	return float64(r.FactsKept) / float64(r.FactsSeen)
}

// norm folds white space, as digests do.
func norm(s string) string { return strings.Join(strings.Fields(s), " ") }

// contents is the decoded text of every message (content and tool-call
// arguments), for fact look-ups.
func contents(msgs []gjson.Result) string {
	var b strings.Builder
	for _, m := range msgs {
		c := m.Get("content")
		if c.IsArray() {
			c.ForEach(func(_, p gjson.Result) bool { b.WriteString(p.Get("text").String()); b.WriteByte('\n'); return true })
		} else {
			b.WriteString(c.String())
		}
		b.WriteByte('\n')
		m.Get("tool_calls").ForEach(func(_, tc gjson.Result) bool {
			b.WriteString(tc.Get("function.arguments").String())
			b.WriteByte('\n')
			return true
		})
	}
	return b.String()
}

// requestHeader tags each replayed request, so replays can share a fake.
const requestHeader = "X-Replay-Request"

// Run replays s. fake is the upstream behind the proxy; it may be shared
// with other replays running at the same time.
func Run(ctx context.Context, s *corpus.Session, fake *fakeupstream.Server, counter *tokenizer.Counter, o Options) (*Result, error) {
	if o.Every <= 0 {
		o.Every = 1
	}
	if o.Client == nil {
		o.Client = http.DefaultClient
	}
	fake.TakeSummaries()
	res := &Result{Session: s.Name, Mode: o.Mode}
	runID := fmt.Sprintf("%p-%d", res, time.Now().UnixNano())
	full, err := s.Request(o.Model, 0)
	if err != nil {
		return nil, err
	}
	if fr, err := countChat(counter, full); err == nil {
		for _, it := range fr.Items {
			res.ContentTokens += it.Tokens
		}
	}
	ends := s.TurnEnds()
	// Summarizer calls are taken after each request, and priced against
	// the requests forwarded before it.
	fwdLog := newForwardedLog("messages", nil)
	countText := func(t string) int { return counter.Text(tokenizer.O200kBase, t) }
	countBody := func(b []byte) int {
		rc, err := countChat(counter, b)
		if err != nil {
			return 0
		}
		return rc.Total
	}
	takeSummaries := func() {
		bodies, answers := fake.TakeSummaryCalls()
		for _, b := range bodies {
			if rc, err := countChat(counter, b); err == nil {
				res.addSummarizerCall(rc.Total, fwdLog.cached(b, countBody))
			} else {
				res.SummarizerCalls++
			}
		}
		for _, a := range answers {
			res.SummarizerTokensOut += countText(a)
		}
	}
	var prevFwd []string
	var prevOutside string
	for i, n := range ends {
		if i%o.Every != 0 && i != len(ends)-1 {
			continue
		}
		body, err := s.Request(o.Model, n)
		if err != nil {
			return nil, err
		}
		if o.Before != nil {
			o.Before(i)
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, o.ProxyURL+"/v1/chat/completions", bytes.NewReader(body))
		if err != nil {
			return nil, fmt.Errorf("building request: %w", err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+o.APIKey)
		reqID := fmt.Sprintf("%s-%d", runID, i)
		req.Header.Set(requestHeader, reqID)
		if o.Mode != "" {
			req.Header.Set("X-Condense-Mode", o.Mode)
		}
		t0 := time.Now()
		resp, err := o.Client.Do(req)
		if err != nil {
			return nil, fmt.Errorf("request %d: %w", i, err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		rq := Request{Messages: n, Status: resp.StatusCode, Latency: time.Since(t0), PrefixKept: -1,
			Applied: resp.Header.Get("X-Condense-Applied"), Degraded: resp.Header.Get("X-Condense-Degraded"),
			Cache: resp.Header.Get("X-Condense-Cache"), Cold: resp.Header.Get("X-Condense-Cold") == "true"}
		rq.TokensSent, _ = strconv.Atoi(resp.Header.Get("X-Condense-Tokens-Before"))
		rq.TokensFwd, _ = strconv.Atoi(resp.Header.Get("X-Condense-Tokens-After"))
		if resp.StatusCode != http.StatusOK {
			res.Rejected++
		}
		// What the upstream received for this request: summarizer calls,
		// then the agent's request itself.
		// The agent's request as the upstream received it (summarizer
		// calls carry no replay header).
		var fwd []byte
		for _, g := range fake.Take(requestHeader, reqID) {
			if !fakeupstream.IsSummaryRequest(g.Body) {
				fwd = g.Body
			}
		}
		if fwd == nil {
			return nil, fmt.Errorf("request %d never reached the upstream (status %d)", i, resp.StatusCode)
		}
		rc, err := countChat(counter, fwd)
		if err != nil {
			return nil, fmt.Errorf("request %d: forwarded body does not parse: %w", i, err)
		}
		res.MaxForwarded = max(res.MaxForwarded, rc.Total)
		rq.FwdCounted = rc.Total
		res.SentTokens += rq.TokensSent
		res.ForwardedTokens += rq.TokensFwd
		sent := gjson.GetBytes(body, "messages").Array()
		out := gjson.GetBytes(fwd, "messages").Array()
		rq.HeadVerbatim = len(out) >= 2 && out[0].Raw == sent[0].Raw && out[1].Raw == sent[1].Raw
		rq.LastVerbatim = len(out) > 0 && out[len(out)-1].Raw == sent[len(sent)-1].Raw
		if rq.Applied != "" && rq.Applied != "none" && len(o.Facts)+len(o.KindFacts) > 0 {
			sentText, fwdText := norm(contents(sent)), norm(contents(out))
			res.facts(rq.Applied, o.Facts, sentText, fwdText, true)
			res.facts(rq.Applied, o.KindFacts, sentText, fwdText, false)
		}
		cur := make([]string, len(out))
		for j, m := range out {
			cur[j] = m.Raw
		}
		outside := string(fwd[:rc.Array[0]]) + "\x00" + string(fwd[rc.Array[1]:])
		if prevFwd != nil {
			rq.PrefixKept = prefixShare(prevFwd, cur)
			if outside == prevOutside {
				rq.CachedTokens = cachedTokens(prevFwd, cur, rc)
			}
		}
		prevFwd, prevOutside = cur, outside
		res.Requests = append(res.Requests, rq)
		if o.DrainEach && o.Drain != nil {
			o.Drain()
		}
		takeSummaries()
		fwdLog.add(fwd)
		res.probe(ctx, o.Recall)
	}
	if o.Drain != nil {
		o.Drain()
	}
	takeSummaries()
	res.probe(ctx, o.Recall)
	var lat []time.Duration
	sum, cnt := 0.0, 0
	for _, r := range res.Requests {
		lat = append(lat, r.Latency)
		if r.PrefixKept >= 0 {
			sum += r.PrefixKept
			cnt++
		}
	}
	if cnt > 0 {
		res.PrefixStability = sum / float64(cnt)
	} else {
		res.PrefixStability = 1
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	if len(lat) > 0 {
		res.LatencyP50 = lat[len(lat)/2]
		res.LatencyP99 = lat[min(len(lat)-1, len(lat)*99/100)]
	}
	return res, nil
}

// cachedTokens counts the tokens of cur (counted as rc) that lead it as
// they led prev: the parts outside the messages (the caller checked they
// are identical) and the identical leading messages.
func cachedTokens(prev, cur []string, rc *view.Request) int {
	n := rc.Total
	for _, it := range rc.Items {
		n -= it.Tokens
	}
	for i := 0; i < len(prev) && i < len(cur) && prev[i] == cur[i]; i++ {
		n += rc.Items[i].Tokens
	}
	return n
}

// countChat counts a chat-completions body as the chat codec does, with
// o200k_base; err when it is not one.
func countChat(counter *tokenizer.Counter, body []byte) (*view.Request, error) {
	return chat.New(counter).Scan(body, func(string) string { return tokenizer.O200kBase })
}

// prefixShare is the share of prev's bytes that cur repeats as an
// identical prefix, message by message.
func prefixShare(prev, cur []string) float64 {
	total, kept := 0, 0
	same := true
	for i, m := range prev {
		total += len(m)
		if same && i < len(cur) && cur[i] == m {
			kept += len(m)
		} else {
			same = false
		}
	}
	if total == 0 {
		return 1
	}
	return float64(kept) / float64(total)
}

// JSON renders r for reports.
func (r *Result) JSON() []byte {
	b, _ := json.MarshalIndent(r, "", "  ")
	return b
}
