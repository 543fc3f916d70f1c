package condense

import (
	"context"
	"fmt"

	"github.com/tidwall/gjson"

	"github.com/condense-proxy/condense-proxy/selective"
)

// AppliedSelective is reported when only tool outputs were digested.
const AppliedSelective = "selective"

// selective digests old tool outputs. fits reports that the result is at
// or under the target (auto) or the threshold (selective mode); out is nil
// when nothing was digested.
func (e *Engine) selective(ctx context.Context, rq *job, b budgets, r *Report, auto bool) (out []byte, fits bool, err error) {
	c := rq.conv
	type call struct{ name, args string }
	calls := map[string]call{}
	msgs := make([]selective.Message, len(c.msgs))
	for i, m := range c.msgs {
		if m.role == "assistant" && len(m.calls) > 0 {
			gjson.Get(m.raw, "tool_calls").ForEach(func(_, tc gjson.Result) bool {
				calls[tc.Get("id").Str] = call{tc.Get("function.name").Str, tc.Get("function.arguments").String()}
				return true
			})
		}
		msgs[i] = selective.Message{Role: m.role, Raw: m.raw, Start: rq.counts.Spans[i][0], Tokens: m.tokens, Content: m.content}
		if m.role == "tool" {
			msgs[i].ToolName, msgs[i].ToolArgs = calls[m.callID].name, calls[m.callID].args
		}
	}
	minSavings := e.opts.MinSavingsTokens
	if minSavings <= 0 {
		minSavings = b.window / 10
	}
	var summarize func(context.Context, selective.Input) (string, error)
	if e.opts.SelectiveSummarizer == "llm" && e.summarizer != nil {
		summarize = func(ctx context.Context, in selective.Input) (string, error) {
			return e.digestWithLLM(ctx, rq, in)
		}
	}
	res, err := e.sel.Apply(ctx, selective.Request{
		Body: rq.body, Messages: msgs, Need: rq.counts.Total - b.target, MinSavings: minSavings,
		Scope: rq.req.Scope, Summarize: summarize,
		Keep: func(id string, original []byte) {
			if e.cache != nil {
				e.cache.Set(context.WithoutCancel(ctx), originalsKey(rq.req.Scope, id), original, e.opts.OriginalsTTL)
			}
		},
	})
	if err != nil {
		return nil, false, fmt.Errorf("selective condensing: %w", err)
	}
	if res.Digested+res.Cleared == 0 {
		return nil, false, nil
	}
	after, err := e.countOut(rq, res.Body)
	if err != nil {
		return nil, false, fmt.Errorf("counting selectively condensed request: %w", err)
	}
	limit := b.target
	if !auto {
		limit = int(float64(b.window) * rq.limits.Threshold)
	}
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

// truncateBody windows body (the request, possibly already digested).
func (e *Engine) truncateBody(ctx context.Context, rq *job, body []byte, b budgets, r *Report) ([]byte, error) {
	if &body[0] != &rq.body[0] {
		rc, err := e.countOut(rq, body)
		if err != nil {
			return nil, fmt.Errorf("counting digested request: %w", err)
		}
		sub := &job{req: rq.req, model: rq.model, limits: rq.limits, body: body}
		if err := e.parse(sub, rc); err != nil {
			return nil, err
		}
		sub.counts = rc
		rq = sub
		b = e.budgets(rq)
	}
	return e.truncate(ctx, rq, b, r)
}

// digestPrompt asks the summarizer for the digest of one tool output.
const digestPrompt = `You are the condense-proxy summarizer. A coding agent's old tool output is being replaced by a digest. Keep what the agent may need later: for code, the path, the structure (declarations with line numbers) and anything that looks wrong; for logs, pass/fail counts, every failing test, every error with its location, the exit status; for searches, the files and the first matches. Exact names, paths and numbers; no commentary. At most 300 words.`

// digestWithLLM asks the summarizer for one output's digest, within the
// summarizer's timeout, concurrency bound and failure back-off.
func (e *Engine) digestWithLLM(ctx context.Context, rq *job, in selective.Input) (string, error) {
	if until := e.summarizerDownUntil.Load(); until > timeNow().UnixNano() {
		return "", fmt.Errorf("summarizer recently failing")
	}
	text := in.Content
	if len(text) > 24000 {
		text = text[:12000] + "\n[… middle omitted …]\n" + text[len(text)-12000:]
	}
	out, err := e.callSummarizer(ctx, SummaryInput{
		Model: e.summaryModel(rq), Prompt: digestPrompt, Level: 1, MaxTokens: 600, Credentials: rq.req.Credentials,
		Text: fmt.Sprintf("Tool %s called with %s. Its output:\n%s", in.Tool, in.Args, text),
	})
	rq.calls++
	if err != nil && ctx.Err() == nil {
		e.summarizerDownUntil.Store(timeNow().Add(e.opts.NegativeTTL).UnixNano())
	}
	return out, err
}
