package condense

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/condense-proxy/condense-proxy/view"
)

// Summaries asked in place. A summarizer call that sends a chunk's
// transcript pays the input price for every token of it. But the agent's
// provider has just cached the conversation that holds the chunk: the
// request forwarded before this one. Asked in place — the request as this
// one is forwarded, then an instruction naming the messages to summarize
// — a summary reads that conversation from the provider's cache (a tenth
// of the input price at Anthropic's and OpenAI's prices) and pays in full
// only for what the newest turn added and the instruction. The cost model
// prices both forms for every call (the tokens the provider is expected
// to hold are known from the conversation's prefix log, prefix.go) and
// the cheaper is asked.
//
// In place needs the request's own model (a summary model of its own has
// no cache of the conversation), a summarizer that can send the request's
// API (InPlacer) and a codec that can write it (view.Asker). Only level-1
// summaries of chunks are asked so: by the background work that prepares
// them (prepare.go), from the request being forwarded — where most
// summaries of a long session are written — and by a request that
// condenses, from the request as received (what was forwarded before it
// when it was not condensed: its first fold).

// inPlace is what a job may ask its summaries in place from.
type inPlace struct {
	fwd *view.Request // the request being forwarded, as scanned
	// Item i (≥ first) of the conversation as received is item i+shift
	// of fwd (items before first were folded into a summary).
	first, shift int
	// prev is the conversation's request forwarded before this one, as
	// the prefix log has it (known: there is one).
	prev  prefixEntry
	known bool
	// cached is how many tokens of fwd the provider is expected to hold,
	// worked out (settled) when a summary is first asked.
	cached  int
	settled bool
	// tool is the recall tool when the request forwarded before this one
	// carried it (Options.RecallTool; the conversation was condensed
	// before): the in-place forms carry it too.
	tool *view.Tool
}

// inPlaceOf returns where rq, about to be forwarded as fwd, may ask its
// summaries in place; nil when it may not. It reads the prefix log now,
// before this request is recorded in it.
func (e *Engine) inPlaceOf(ctx context.Context, rq *job, fwd *view.Request, first, shift int) *inPlace {
	if _, ok := rq.codec.(view.Asker); !ok || fwd == nil {
		return nil
	}
	if p, ok := e.summarizer.(InPlacer); !ok || !p.InPlace(rq.codec) {
		return nil
	}
	if e.llmModel(rq) != rq.model || rq.req.CountOnly {
		return nil
	}
	ip := &inPlace{fwd: fwd, first: first, shift: shift}
	ip.prev, ip.known = e.prefixOf(ctx, rq.req.Scope+"\x00"+conversationID(rq.in))
	if ip.known && ip.prev.condensed {
		ip.tool = e.opts.RecallTool // the request before carried it
	}
	return ip
}

// clone returns ip with fwd copied, for work that outlives the request
// (in, if not nil, is the copy of the request as received, which fwd may
// be).
func (ip *inPlace) clone(orig, in *view.Request) *inPlace {
	c := *ip
	if ip.fwd == orig && in != nil {
		c.fwd = in
		return &c
	}
	c.fwd = detached(ip.fwd)
	return &c
}

// detached returns a copy of r that owns its body and items, for work
// that outlives the request (whose body buffer may be reused).
func detached(r *view.Request) *view.Request {
	d := *r
	d.Body = bytes.Clone(r.Body)
	d.Items = append([]view.Item(nil), r.Items...)
	return &d
}

// settle works out how much of fwd the provider holds: its prefix shared
// with the previous request forwarded, when that is within the cache's
// lifetime and long enough to be cached.
func (e *Engine) settle(rq *job, ip *inPlace) {
	if ip.settled {
		return
	}
	ip.settled = true
	p := pricesOf(rq.limits)
	if !ip.known || e.now().Sub(ip.prev.at) >= p.ttl {
		return
	}
	if n := sharedPrefix(ip.prev, summarizeForPrefix(ip.fwd)); n >= p.minPrefix {
		ip.cached = n
	}
}

// price is what a summary asked in place from ip costs as input, in units
// of the input price: the cached part of the request read, the rest and
// an instruction of instruction tokens written.
func (ip *inPlace) price(p prices, instruction int) float64 {
	return p.read*float64(ip.cached) + p.write*float64(max(ip.fwd.Total-ip.cached, 0)+instruction)
}

// inPlacePrompt opens the instruction of a summary asked in place; the
// summarizer's prompt (the sections to write) follows it.
const inPlacePrompt = `You are the condense-proxy summarizer. The older part of this conversation is being folded into a summary, and you write it. Do not continue the task and do not call any tool: answer with the summary only, as text.

Summarize messages %d to %d of this conversation, counting its first message as 1: from the one that begins “%s” to the one that ends “%s”. The messages after them are context only: do not summarize them.
`

// askInPlace returns the in-place form of in, a level-1 summary of the
// received items [from, to), and its price in units of the input price;
// ok is false when it cannot be asked so or costs more than in as it is.
func (e *Engine) askInPlace(rq *job, from, to int, in SummaryInput) (body []byte, price float64, ok bool) {
	ip := rq.inplace
	if ip == nil || from < ip.first || to <= from {
		return nil, 0, false
	}
	if e.settle(rq, ip); ip.cached == 0 {
		return nil, 0, false
	}
	a, b := from+ip.shift, to-1+ip.shift
	if a < 0 || b >= len(ip.fwd.Items) || ip.fwd.Raw(a) != rq.in.Raw(from) || ip.fwd.Raw(b) != rq.in.Raw(to-1) {
		return nil, 0, false
	}
	var text strings.Builder
	fmt.Fprintf(&text, inPlacePrompt, a+1, b+1, edge(rq.codec.Text(rq.in, from).Text, true), edge(rq.codec.Text(rq.in, to-1).Text, false))
	if in.Previous != "" {
		fmt.Fprintf(&text, "\nThe summary of the messages before them (context only):\n<previous-summary>\n%s\n</previous-summary>\n", in.Previous)
	}
	text.WriteString("\n" + in.Prompt)
	count := func(s string) int { return e.counter.Text(rq.limits.Encoding, s) }
	instruction := count(text.String())
	lim := e.models.Limits(in.Model)
	if lim.Window > 0 && float64(ip.fwd.Total+instruction+in.MaxTokens)*max(lim.SafetyFactor, 1) > float64(lim.Window) {
		return nil, 0, false
	}
	price = ip.price(pricesOf(rq.limits), instruction)
	if price >= float64(count(in.Prompt)+count(UserPrompt(in))) {
		return nil, 0, false
	}
	body, ok, err := rq.codec.(view.Asker).Ask(ip.fwd, text.String(), in.MaxTokens)
	if err != nil || !ok {
		return nil, 0, false
	}
	if t, can := rq.codec.(view.Tools); can && ip.tool != nil {
		// As the proxy adds it to the request this one continues (the
		// same bytes every time); a request that cannot take it did
		// not get it there either.
		if with, added, err := t.AddTool(body, *ip.tool); err == nil && added {
			body = with
		}
	}
	return body, price, true
}

// edge returns about the first (start) or last 80 characters of s, on
// one line, to name a message in an instruction.
func edge(s string, start bool) string {
	s = strings.Join(strings.Fields(s), " ")
	const n = 80
	if len(s) <= n {
		return s
	}
	if start {
		i := n
		for i > 0 && !utf8.RuneStart(s[i]) {
			i--
		}
		return s[:i] + "…"
	}
	i := len(s) - n
	for i < len(s) && !utf8.RuneStart(s[i]) {
		i++
	}
	return "…" + s[i:]
}
