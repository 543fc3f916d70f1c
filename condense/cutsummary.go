package condense

import (
	"context"
	"fmt"
)

// auto's summaries. When digests no longer keep a conversation under the
// threshold, auto cuts it where selective condensing's sliding window
// would — deep and rarely, by the cost model's stride, remembered — and
// puts summaries of what the cut omits where the window's marker would be:
// the same busts, the same reads, plus what the summaries hold. They are
// summaries of the conversation as digested (the summarizer reads
// digests, not whole outputs), chunked on the counts as received so a
// chunk never changes, and bounded to a small budget (cutSummary
// tokens). An LLM writes them only while the conversation's summarizer
// spending stays within auto_llm_share of what the conversation would
// have cost uncondensed so far; past that, the extractive summarizer
// does, for free. Either kind, once written for a chunk, is what that
// chunk keeps.

// cutSummary renders the summaries of steps [firstStep, keep) of rq's
// conversation as a note, with its text (what the budget b.cutSummary
// bounds), or returns nil when there is nothing to summarize.
func (e *Engine) cutSummary(ctx context.Context, rq *job, b budgets, r *Report, firstStep, keep int) ([]byte, string, error) {
	c := rq.conv
	chunks := cutChunks(rq.gridTokens(), firstStep, keep, b.chunk)
	if len(chunks) == 0 {
		return nil, "", nil
	}
	if !rq.notes { // notes are written, not asked for (withoutCall)
		e.cutAllowance(ctx, rq, b, r, chunks)
	}
	sz := e.cutSize(b)
	items, err := e.summarizeChunks(ctx, rq, sz, chunks)
	if err != nil {
		return nil, "", err
	}
	if items, err = e.foldLevels(ctx, rq, sz, items, b.cutSummary); err != nil {
		return nil, "", err
	}
	from, rest := c.steps[firstStep].first, c.steps[keep].first
	note, text := e.summaryNote(ctx, rq, items, rest-from, rest)
	rq.addSummaryChanges(items, rq.received())
	// Every summary of the request (a fold's before the cut's, when the
	// cut follows one).
	levels := map[int]int{}
	for _, ch := range rq.changes {
		if ch.Kind == ChangeSummary {
			levels[ch.Level]++
		}
	}
	rq.reportSummaries(r, levels)
	rq.cutSummarized = true
	return note, text, nil
}

// cutChunks cuts steps [firstStep, keep) into chunks of about chunkTokens
// on grid (the received request's step tokens), the last one open.
func cutChunks(grid []int, firstStep, keep, chunkTokens int) []chunk {
	var chunks []chunk
	start, acc := firstStep, 0
	for i := firstStep; i < keep; i++ {
		acc += grid[i]
		if acc >= chunkTokens {
			chunks = append(chunks, chunk{start, i + 1})
			start, acc = i+1, 0
		}
	}
	if start < keep {
		chunks = append(chunks, chunk{start, keep})
	}
	return chunks
}

// cutAllowance makes the job's summaries of chunks extractive when LLM
// ones would cost more than auto's allowance: auto_llm_share of the
// conversation's uncondensed bill so far, less what it spent already.
func (e *Engine) cutAllowance(ctx context.Context, rq *job, b budgets, r *Report, chunks []chunk) {
	if rq.extractiveSummaries || e.summaryModel(rq) == "extractive" {
		return
	}
	var billed, spent float64
	if p, ok := e.prefixOf(ctx, rq.req.Scope+"\x00"+r.Conversation); ok {
		billed, spent = p.billed, p.spent
	}
	allowance := e.opts.AutoLLMShare*billed - spent
	perToken := e.summaryPerToken(rq, e.perCutSummaryTokens(b), b.chunk)
	cost := 0.0
	for _, ch := range chunks {
		cost += perToken * float64(rq.conv.stepTokens(ch.a, ch.b))
	}
	if cost > allowance {
		rq.extractiveSummaries = true
		// A choice, not a fallback: extractive stand-ins are what auto
		// forwards past its allowance (not Degraded).
		addReason(r, fmt.Sprintf("; extractive summaries: LLM ones would cost about %.0f input tokens' worth, over auto's allowance of %.0f (condense.auto_llm_share)", cost, max(allowance, 0)), PathExtractiveAllowance)
	}
}

// perCutSummaryTokens bounds what one of auto's summaries says (its
// facts may take factRoom times that: b.cutSummary counts them).
func (e *Engine) perCutSummaryTokens(b budgets) int {
	return max(100, min(e.opts.SummaryMaxTokens, b.cutSummary/factRoom/groupSize))
}

// factRoom is how many times its budget a stand-in's facts may take
// (fitSummary): what it says keeps the budget, the facts get as much
// again.
const factRoom = 2

// summarySize bounds the summaries of one condensation: each says at most
// tokens, and an extractive one keeps its facts in facts (0: no room of
// their own).
type summarySize struct{ tokens, facts int }

// foldSize is the size of a fold's summaries: a few of them per level fit
// the summary budget; no fact room.
func (e *Engine) foldSize() summarySize { return summarySize{tokens: e.perSummaryTokens()} }

// cutSize is the size of auto's stand-ins of what its cut omits: smaller
// (perCutSummaryTokens), their facts in factRoom times that.
func (e *Engine) cutSize(b budgets) summarySize {
	t := e.perCutSummaryTokens(b)
	return summarySize{tokens: t, facts: factRoom * t}
}
