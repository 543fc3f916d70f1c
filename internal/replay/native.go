package replay

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	"github.com/condense-proxy/condense-proxy/internal/corpus"
	"github.com/condense-proxy/condense-proxy/internal/fakeupstream"
	"github.com/condense-proxy/condense-proxy/tokenizer"
)

// Wire formats a native replay speaks.
const (
	FormatMessages  = "messages"  // Anthropic Messages, POST /v1/messages?beta=true
	FormatResponses = "responses" // OpenAI Responses, POST /v1/responses
	FormatGemini    = "gemini"    // Google Gemini, POST /v1beta/models/{model}:streamGenerateContent?alt=sse
)

// NativeSession is a session in a native wire format
// (corpus.MessagesSession, corpus.ResponsesSession, corpus.GeminiSession):
// request k is the body the agent sends at its k-th turn. A Gemini
// session names the model of its requests' path with a method
// PathModel() string (default corpus.GeminiModel).
type NativeSession interface {
	Turns() int
	Request(k int) ([]byte, error)
}

// Upstream is the fakes behind the proxy in a native replay. The fake of
// the replay's format is required; Chat, if set, is where summarizer calls
// in chat form go (they are counted with the native fake's).
type Upstream struct {
	Chat      *fakeupstream.Server
	Messages  *fakeupstream.Messages
	Responses *fakeupstream.Responses
	Gemini    *fakeupstream.Gemini
}

// nativeFake is what a replay needs of a native format's fake.
type nativeFake interface {
	Take(key, v string) []fakeupstream.Received
	TakeSummaries() []fakeupstream.Received
}

// nativeForm is what a replay needs to know of a wire format.
type nativeForm struct {
	fake   nativeFake
	path   string           // where requests are posted
	arrKey string           // the conversation's array
	count  func([]byte) int // tokens of a body, as the fake counts them
	// head is what must reach the upstream byte for byte: the prompt's
	// fields outside the conversation and its first items.
	head func(body []byte) []string
	// same is an item as a provider's prompt cache compares it; nil: its
	// bytes.
	same func(gjson.Result) string
	// headers are the agent's.
	headers func(h http.Header, key string)
}

// formOf returns the form of format, its fake in up.
func formOf(format string, s NativeSession, up Upstream, counter *tokenizer.Counter) (*nativeForm, error) {
	first := func(arrKey string, outside ...string) func([]byte) []string {
		return func(b []byte) []string {
			h := []string{gjson.GetBytes(b, arrKey+".0").Raw}
			for _, k := range outside {
				h = append(h, gjson.GetBytes(b, k).Raw)
			}
			return h
		}
	}
	switch format {
	case FormatMessages:
		if up.Messages == nil {
			return nil, fmt.Errorf("replay: no Messages fake")
		}
		return &nativeForm{fake: up.Messages, path: "/v1/messages?beta=true", arrKey: "messages",
			count: func(b []byte) int { return fakeupstream.CountMessages(counter, up.Messages.Signer, b) },
			head:  first("messages", "system"), same: withoutCacheControl, headers: claudeHeaders}, nil
	case FormatResponses:
		if up.Responses == nil {
			return nil, fmt.Errorf("replay: no Responses fake")
		}
		return &nativeForm{fake: up.Responses, path: "/v1/responses", arrKey: "input",
			count: func(b []byte) int { return fakeupstream.CountResponses(counter, up.Responses.Signer, b) },
			head: func(b []byte) []string {
				// The leading developer items and the first after them.
				var h []string
				for _, it := range gjson.GetBytes(b, "input").Array() {
					h = append(h, it.Raw)
					if it.Get("role").String() != "developer" && it.Get("role").String() != "system" {
						break
					}
				}
				return append(h, gjson.GetBytes(b, "instructions").Raw)
			},
			headers: codexHeaders}, nil
	case FormatGemini:
		if up.Gemini == nil {
			return nil, fmt.Errorf("replay: no Gemini fake")
		}
		model := corpus.GeminiModel
		if pm, ok := s.(interface{ PathModel() string }); ok {
			model = pm.PathModel()
		}
		return &nativeForm{fake: up.Gemini, path: "/v1beta/models/" + url.PathEscape(model) + ":streamGenerateContent?alt=sse", arrKey: "contents",
			count:   func(b []byte) int { return fakeupstream.CountGemini(counter, b) },
			head:    first("contents", "systemInstruction"),
			headers: geminiHeaders}, nil
	}
	return nil, fmt.Errorf("replay: unknown format %q", format)
}

// RunNative replays s, a session in format (FormatMessages,
// FormatResponses or FormatGemini), through the proxy turn by turn, with
// the measurements of Run: rejected requests, the largest forwarded
// request (counted as the fake counts: fakeupstream.CountMessages,
// CountResponses or CountGemini), head and last item verbatim, prefix
// stability over the messages (items, contents), latencies, facts. The
// head is system and the first message (Messages), the leading developer
// items and the first item after them (Responses), or systemInstruction
// and the first content (Gemini).
//
// For Messages it also posts the same body to
// /v1/messages/count_tokens?beta=true through the proxy and records the
// answer next to the forwarded count (Request.CountTokens, Result.CountTokensOff).
//
// name names the session in the result; up.Messages, up.Responses or
// up.Gemini must be the upstream behind the proxy.
func RunNative(ctx context.Context, name, format string, s NativeSession, up Upstream, counter *tokenizer.Counter, o Options) (*Result, error) {
	if o.Every <= 0 {
		o.Every = 1
	}
	if o.Client == nil {
		o.Client = http.DefaultClient
	}
	form, err := formOf(format, s, up, counter)
	if err != nil {
		return nil, err
	}
	fake, count := form.fake, form.count
	list := func(b []byte) []gjson.Result { return gjson.GetBytes(b, form.arrKey).Array() }
	if up.Chat != nil {
		up.Chat.TakeSummaries()
	}
	fake.TakeSummaries()
	res := &Result{Session: name, Mode: o.Mode, Format: format}
	runID := fmt.Sprintf("%p-%d", res, time.Now().UnixNano())
	turns := s.Turns()
	if turns == 0 {
		return nil, fmt.Errorf("replay: session %s has no request", name)
	}
	if full, err := s.Request(turns - 1); err == nil {
		res.ContentTokens = count(full)
	}
	// Summarizer calls are taken after each request, and priced against
	// the requests forwarded before it.
	fwdLog := newForwardedLog(form.arrKey, form.same)
	countText := func(t string) int { return counter.Text(tokenizer.O200kBase, t) }
	takeSummaries := func() {
		var sums [][]byte
		var answers []string
		if up.Chat != nil {
			sums, answers = up.Chat.TakeSummaryCalls()
		}
		for _, r := range fake.TakeSummaries() {
			sums = append(sums, r.Body)
			if r.Answer != "" {
				answers = append(answers, r.Answer)
			}
		}
		for _, a := range answers {
			res.SummarizerTokensOut += countText(a)
		}
		for _, b := range sums {
			countBody := count
			if _, err := countChat(counter, b); err == nil {
				countBody = func(b []byte) int {
					rc, err := countChat(counter, b)
					if err != nil {
						return 0
					}
					return rc.Total
				}
			}
			res.addSummarizerCall(countBody(b), fwdLog.cached(b, countBody))
		}
	}
	var prevFwd []string
	var prevOutside string
	for i := 0; i < turns; i++ {
		if i%o.Every != 0 && i != turns-1 {
			continue
		}
		body, err := s.Request(i)
		if err != nil {
			return nil, err
		}
		if o.Before != nil {
			o.Before(i)
		}
		reqID := fmt.Sprintf("%s-%d", runID, i)
		t0 := time.Now()
		resp, err := o.post(ctx, form, form.path, body, reqID)
		if err != nil {
			return nil, fmt.Errorf("request %d: %w", i, err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		sent := list(body)
		rq := Request{Messages: len(sent), Status: resp.StatusCode, Latency: time.Since(t0), PrefixKept: -1,
			Applied: resp.Header.Get("X-Condense-Applied"), Degraded: resp.Header.Get("X-Condense-Degraded"),
			Cache: resp.Header.Get("X-Condense-Cache")}
		rq.TokensSent, _ = strconv.Atoi(resp.Header.Get("X-Condense-Tokens-Before"))
		rq.TokensFwd, _ = strconv.Atoi(resp.Header.Get("X-Condense-Tokens-After"))
		if resp.StatusCode != http.StatusOK {
			res.Rejected++
		}
		var fwd []byte
		for _, g := range fake.Take(requestHeader, reqID) {
			if !fakeupstream.IsSummaryRequest(g.Body) {
				fwd = g.Body
			}
		}
		if fwd == nil {
			return nil, fmt.Errorf("request %d never reached the upstream (status %d)", i, resp.StatusCode)
		}
		if !gjson.ValidBytes(fwd) {
			return nil, fmt.Errorf("request %d: forwarded body is not JSON", i)
		}
		rq.FwdCounted = count(fwd)
		res.MaxForwarded = max(res.MaxForwarded, rq.FwdCounted)
		res.SentTokens += rq.TokensSent
		res.ForwardedTokens += rq.TokensFwd
		out := list(fwd)
		hs, hf := form.head(body), form.head(fwd)
		rq.HeadVerbatim = len(hs) == len(hf)
		for j := range hs {
			rq.HeadVerbatim = rq.HeadVerbatim && hs[j] == hf[j]
		}
		rq.LastVerbatim = len(out) > 0 && len(sent) > 0 && out[len(out)-1].Raw == sent[len(sent)-1].Raw
		if format == FormatMessages {
			n, err := o.countTokens(ctx, body, reqID+"-count")
			if err != nil {
				return nil, fmt.Errorf("request %d: count_tokens: %w", i, err)
			}
			fake.Take(requestHeader, reqID+"-count")
			rq.CountTokens = n
			res.CountTokensChecked++
			if n != rq.FwdCounted {
				res.CountTokensOff++
			}
			if rq.FwdCounted > 0 {
				d := float64(n-rq.FwdCounted) / float64(rq.FwdCounted)
				if d < 0 {
					d = -d
				}
				res.CountTokensMaxDiff = max(res.CountTokensMaxDiff, d)
			}
		}
		if rq.Applied != "" && rq.Applied != "none" && len(o.Facts)+len(o.KindFacts) > 0 {
			sentText, fwdText := norm(strings.Join(nativeTexts(body), "\n")), norm(strings.Join(nativeTexts(fwd), "\n"))
			res.facts(rq.Applied, o.Facts, sentText, fwdText, true)
			res.facts(rq.Applied, o.KindFacts, sentText, fwdText, false)
		}
		cur := make([]string, len(out))
		for j, m := range out {
			cur[j] = m.Raw
			if form.same != nil {
				cur[j] = form.same(m)
			}
		}
		arr := gjson.GetBytes(fwd, form.arrKey)
		outside := string(fwd[:arr.Index]) + "\x00" + string(fwd[arr.Index+len(arr.Raw):])
		if prevFwd != nil {
			rq.PrefixKept = prefixShare(prevFwd, cur)
			if outside == prevOutside {
				rq.CachedTokens = cachedByBytes(prevFwd, cur, len(outside), rq.FwdCounted)
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
	res.finish()
	return res, nil
}

// cachedByBytes estimates the tokens of a forwarded request (forwarded in
// all) that repeat the previous one as prefix: the parts outside the items
// (the caller checked they are identical) and the identical leading items,
// in proportion to their bytes.
func cachedByBytes(prev, cur []string, outside, forwarded int) int {
	total, same := outside, outside
	lead := true
	for i, m := range cur {
		total += len(m)
		if lead && i < len(prev) && prev[i] == m {
			same += len(m)
		} else {
			lead = false
		}
	}
	if total == 0 {
		return 0
	}
	return int(float64(forwarded) * float64(same) / float64(total))
}

// post sends one replayed request in the form's shape (Claude Code's,
// Codex's or Gemini CLI's headers).
func (o Options) post(ctx context.Context, form *nativeForm, path string, body []byte, reqID string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, o.ProxyURL+path, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("building request: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	form.headers(req.Header, o.APIKey)
	req.Header.Set(requestHeader, reqID)
	if o.Mode != "" {
		req.Header.Set("X-Condense-Mode", o.Mode)
	}
	return o.Client.Do(req)
}

func claudeHeaders(h http.Header, key string) {
	h.Set("x-api-key", key)
	h.Set("anthropic-version", "2023-06-01")
	h.Set("anthropic-beta", "claude-code-20250219,interleaved-thinking-2025-05-14,context-management-2025-06-27,prompt-caching-scope-2026-01-05")
	h.Set("x-app", "cli")
}

func codexHeaders(h http.Header, key string) {
	h.Set("Authorization", "Bearer "+key)
	h.Set("Accept", "text/event-stream")
	h.Set("originator", "codex_exec")
}

func geminiHeaders(h http.Header, key string) {
	h.Set("x-goog-api-key", key)
	h.Set("User-Agent", "GeminiCLI/0.61.0/gemini-2.5-pro (linux; x64)")
	h.Set("x-goog-api-client", "google-genai-sdk/1.30.0 gl-node/v20.20.2")
}

// countTokens asks /v1/messages/count_tokens for body.
func (o Options) countTokens(ctx context.Context, body []byte, reqID string) (int, error) {
	// count_tokens takes no stream or max_tokens; Claude Code sends the
	// same model, messages, system and tools.
	resp, err := o.post(ctx, &nativeForm{headers: claudeHeaders}, "/v1/messages/count_tokens?beta=true", body, reqID)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, err
	}
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("status %d: %s", resp.StatusCode, b)
	}
	var v struct {
		InputTokens *int `json:"input_tokens"`
	}
	if err := json.Unmarshal(b, &v); err != nil || v.InputTokens == nil {
		return 0, fmt.Errorf("answer %s", b)
	}
	return *v.InputTokens, nil
}

// withoutCacheControl returns a message without its cache_control
// markers, and with a content of one text block written as a string:
// Claude Code moves its marker to the newest message every turn (a string
// content becoming a block to carry it), and neither is part of what the
// prompt cache compares.
func withoutCacheControl(m gjson.Result) string {
	raw := m.Raw
	content := m.Get("content")
	if content.IsArray() {
		if bs := content.Array(); len(bs) == 1 && bs[0].Get("type").String() == "text" {
			if n := len(bs[0].Map()); n == 2 || (n == 3 && bs[0].Get("cache_control").Exists()) {
				s, _ := sjson.Set(raw, "content", bs[0].Get("text").String())
				return s
			}
		}
	}
	if !strings.Contains(raw, `"cache_control"`) {
		return raw
	}
	content.ForEach(func(k, b gjson.Result) bool {
		if b.Get("cache_control").Exists() {
			raw, _ = sjson.Delete(raw, "content."+k.String()+".cache_control")
		}
		b.Get("content").ForEach(func(kk, inner gjson.Result) bool {
			if inner.Get("cache_control").Exists() {
				raw, _ = sjson.Delete(raw, "content."+k.String()+".content."+kk.String()+".cache_control")
			}
			return true
		})
		return true
	})
	return raw
}

// nativeTexts is every string of a native body's messages, input items
// or contents but opaque values (signatures, encrypted content, ids), for
// fact look-ups.
func nativeTexts(body []byte) []string {
	var out []string
	var walk func(k string, v gjson.Result)
	walk = func(k string, v gjson.Result) {
		switch {
		case v.IsObject() || v.IsArray():
			v.ForEach(func(kk, vv gjson.Result) bool { walk(kk.String(), vv); return true })
		case v.Type == gjson.String:
			switch k {
			case "signature", "data", "encrypted_content", "id", "call_id", "tool_use_id", "type", "role", "thoughtSignature":
				return
			}
			out = append(out, v.String())
		}
	}
	root := gjson.ParseBytes(body)
	walk("", root.Get("messages"))
	walk("", root.Get("input"))
	walk("", root.Get("contents"))
	return out
}

// finish computes the aggregate measurements from the requests.
func (res *Result) finish() {
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
}
