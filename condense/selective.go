package condense

import (
	"context"
	"fmt"

	"github.com/condense-proxy/condense-proxy/selective"
)

// AppliedSelective is reported when only tool outputs were digested.
const AppliedSelective = "selective"

// selective digests old tool outputs. fits reports that the result is at
// or under the limit; out is nil when nothing was digested.
func (e *Engine) selective(ctx context.Context, rq *job, b budgets, r *Report) (out []byte, fits bool, err error) {
	msgs := selectiveView(rq.conv)
	minSavings := e.opts.MinSavingsTokens
	if minSavings <= 0 {
		// Digests are added a stride at a time: the set changes (and the
		// prefix with it) only when the request crosses the limit again.
		minSavings = b.stride
	}
	var summarize func(context.Context, selective.Input) (string, error)
	if e.opts.SelectiveSummarizer == "llm" && e.summarizer != nil {
		summarize = func(ctx context.Context, in selective.Input) (string, error) {
			return e.digestWithLLM(ctx, rq, in)
		}
	}
	res, err := e.sel.Apply(ctx, selective.Request{
		Body: rq.in.Body, Messages: msgs, Need: rq.in.Total - b.limit, MinSavings: minSavings,
		ProtectFrom: e.protectFrom(rq, msgs, b),
		Scope:       rq.req.Scope, Summarize: summarize, CacheOnly: rq.req.CountOnly,
		Keep: func(id string, original func() []byte) {
			e.keepOriginal(ctx, rq, id, original)
		},
	})
	if err != nil {
		return nil, false, fmt.Errorf("selective condensing: %w", err)
	}
	if res.Digested+res.Cleared == 0 {
		return nil, false, nil
	}
	for _, d := range res.Made {
		rq.changes = append(rq.changes, Change{Kind: ChangeDigest, ID: d.ID, From: d.Item, To: d.Item + 1, Tool: d.Tool,
			TokensBefore: d.Before, TokensAfter: d.After, Text: d.Text})
	}
	after, err := e.countOut(rq, res.Body)
	if err != nil {
		return nil, false, fmt.Errorf("counting selectively condensed request: %w", err)
	}
	limit := b.limit
	r.Reason += fmt.Sprintf("; %d tool outputs digested", res.Digested)
	if res.Cleared > 0 {
		r.Reason += fmt.Sprintf(", %d tool inputs shortened", res.Cleared)
	}
	if after.Total <= limit {
		r.Applied = AppliedSelective
		return res.Body, true, nil
	}
	return res.Body, false, nil
}

// protectFrom returns the index in msgs from which no output is digested:
// the newest keep_recent_tool_outputs outputs, and the steps back to the
// stride grid point before them. Outputs then become candidates a stride
// at a time rather than one per turn, so the digests inside the part of
// the request a window keeps change in few, large steps.
func (e *Engine) protectFrom(rq *job, msgs []selective.Message, b budgets) int {
	keep := e.sel.KeepRecent()
	if keep <= 0 {
		return len(msgs)
	}
	item := -1 // the item of the keep-th newest output
	for i, n := len(msgs)-1, 0; i >= 0; i-- {
		if msgs[i].Role == "tool" {
			if n++; n == keep {
				item = msgs[i].Item
				break
			}
		}
	}
	if item < 0 {
		return 0 // fewer outputs than protected: none is a candidate
	}
	c := rq.conv
	step := len(c.steps)
	for i, s := range c.steps {
		if s.first <= item && item < s.end {
			step = i
			break
		}
	}
	// The grid point at or before that step.
	grid := rq.gridTokens()
	point, acc := 0, 0
	for i := 0; i < step; i++ {
		if acc += grid[i]; acc >= b.stride {
			point, acc = i+1, 0
		}
	}
	first := c.head
	if point < len(c.steps) {
		first = c.steps[point].first
	}
	for i, m := range msgs {
		if m.Item >= first {
			return i
		}
	}
	return len(msgs)
}

// truncateBody windows body (the request, possibly already digested).
func (e *Engine) truncateBody(ctx context.Context, rq *job, body []byte, b budgets, r *Report) ([]byte, error) {
	if &body[0] != &rq.in.Body[0] {
		vr, err := e.countOut(rq, body)
		if err != nil {
			return nil, fmt.Errorf("counting digested request: %w", err)
		}
		sub := &job{req: rq.req, codec: rq.codec, model: rq.model, limits: rq.limits, in: vr, changes: rq.changes, stop: rq.stop,
			over: rq.over, orig: rq.received()}
		if err := e.parse(sub); err != nil {
			return nil, err
		}
		out, err := e.truncate(ctx, sub, e.budgets(sub), r)
		rq.changes = sub.changes
		return out, err
	}
	return e.truncate(ctx, rq, b, r)
}

// selectiveView is the view package selective works on: every item, and
// each tool output as a "tool" message of its own (a Messages user turn
// may carry several).
func selectiveView(c *conversation) []selective.Message {
	type call struct{ name, args string }
	calls := map[string]call{}
	msgs := make([]selective.Message, 0, c.len())
	for i, it := range c.req.Items {
		for _, cl := range it.Calls {
			calls[cl.ID] = call{cl.Name, cl.Args}
		}
		if len(it.Outputs) == 0 || it.Outputs[0].Own {
			m := selective.Message{Role: it.Role, Raw: c.raw(i), Start: it.Start, Tokens: it.Tokens, Item: i, Frozen: it.Frozen}
			for _, cl := range it.Calls {
				if cl.ArgsSpan[1] > 0 && !it.Frozen {
					m.Args = append(m.Args, [2]int{cl.ArgsSpan[0] - it.Start, cl.ArgsSpan[1] - it.Start})
				}
			}
			if len(it.Outputs) > 0 {
				// The item's own text: digestible only when picked.
				o := it.Outputs[0]
				m.Raw, m.Start, m.Content, m.Tokens, m.Frozen = c.req.Span(o.Start, o.End), o.Start, o.Value, o.Tokens, o.Frozen || it.Frozen
			}
			msgs = append(msgs, m)
			continue
		}
		for _, o := range it.Outputs {
			msgs = append(msgs, selective.Message{Role: "tool", Raw: c.req.Span(o.Start, o.End), Start: o.Start, Tokens: o.Tokens,
				ToolName: calls[o.CallID].name, ToolArgs: calls[o.CallID].args, Content: o.Value, Item: i, Frozen: o.Frozen || it.Frozen})
		}
	}
	return msgs
}

// digestPrompt asks the summarizer for the digest of one tool output.
const digestPrompt = `You are the condense-proxy summarizer. A coding agent's old tool output is being replaced by a digest. Keep what the agent may need later: for code, the path, the structure (declarations with line numbers) and anything that looks wrong; for logs, pass/fail counts, every failing test, every error with its location, the exit status; for searches, the files and the first matches. Exact names, paths and numbers; no commentary. At most 300 words.`

// digestWithLLM asks the summarizer for one output's digest: one call per
// output shared by concurrent requests (and replicas), within the
// summarizer's timeout, concurrency bound and per-caller failure back-off.
func (e *Engine) digestWithLLM(ctx context.Context, rq *job, in selective.Input) (string, error) {
	model := e.summaryModel(rq)
	if e.backingOff(rq, model) {
		return "", fmt.Errorf("summarizer recently failing")
	}
	if rq.waitOver() {
		return "", errStoppedWaiting
	}
	text := in.Content
	if len(text) > 24000 {
		text = text[:12000] + "\n[… middle omitted …]\n" + text[len(text)-12000:]
	}
	key := "digllm:" + rq.req.Scope + ":" + model + ":" + in.Key
	return e.shared(ctx, rq, key, SummaryInput{
		Model: model, Prompt: digestPrompt, Level: 1, MaxTokens: 600, Credentials: rq.req.Credentials, Format: rq.codec.Format(),
		Text: fmt.Sprintf("Tool %s called with %s. Its output:\n%s", in.Tool, in.Args, text),
	}, func(s string) string { return s })
}
