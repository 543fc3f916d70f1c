package condense

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/tidwall/sjson"

	"github.com/condense-proxy/condense-proxy/tokenizer"
)

// errTooLarge: even the head and the last step do not fit the window.
var errTooLarge = errors.New("head and last step alone exceed the context window")

func userMessage(content string) []byte {
	b, _ := json.Marshal(map[string]string{"role": "user", "content": content})
	return b
}

// rebuild replaces the messages of the body with head + inserted + the
// messages from rest on, leaving every other byte of the body as it was.
func rebuild(rq *job, inserted []byte, rest int) ([]byte, error) {
	c := rq.conv
	arr := c.appendRaw([]byte{'['}, 0, c.head)
	if len(arr) > 1 {
		arr = append(arr, ',')
	}
	arr = append(arr, inserted...)
	arr = c.appendRaw(arr, rest, len(c.msgs))
	arr = append(arr, ']')
	out, err := sjson.SetRawBytes(rq.body, "messages", arr)
	if err != nil {
		return nil, fmt.Errorf("writing condensed messages: %w", err)
	}
	return out, nil
}

// full folds the complete chunks before the tail into summaries. It
// returns nil when there is nothing to fold or the result is still over
// the target (the caller then uses the sliding window).
func (e *Engine) full(ctx context.Context, rq *job, b budgets, r *Report) ([]byte, error) {
	p := makePlan(rq.conv, b)
	if len(p.folded) == 0 {
		r.Reason += "; no complete chunk to summarize"
		return nil, nil
	}
	items, err := e.summarizeChunks(ctx, rq, p.folded)
	if err != nil {
		return nil, err
	}
	if items, err = e.foldLevels(ctx, rq, items, b.summary); err != nil {
		return nil, err
	}
	c := rq.conv
	rest := c.steps[p.foldEnd-1].end
	if p.foldEnd < len(c.steps) {
		rest = c.steps[p.foldEnd].first
	}
	summaryMsg := userMessage(renderSummary(items, rest-c.head))
	out, err := rebuild(rq, summaryMsg, rest)
	if err != nil {
		return nil, err
	}
	levels := map[int]int{}
	var degraded []string
	for _, it := range items {
		levels[it.level]++
		if it.degraded != "" {
			degraded = append(degraded, it.degraded)
		}
	}
	rc, err := e.countOut(rq, out)
	if err != nil {
		return nil, fmt.Errorf("counting condensed request: %w", err)
	}
	r.Summaries = formatLevels(levels)
	r.Cache = cacheState(rq.hits, rq.misses)
	if len(degraded) > 0 {
		addDegraded(r, degraded[0])
	}
	if rc.Total > b.target {
		// The recent steps alone are over budget: keep the summary and
		// window the verbatim steps after it.
		out, err = e.window(ctx, rq, b, r, summaryMsg, p.foldEnd)
		if err != nil || out == nil {
			r.Reason += fmt.Sprintf("; summaries left %d tokens, over the target %d", rc.Total, b.target)
			return nil, err
		}
		addDegraded(r, "recent steps over budget; older verbatim steps after the summary omitted")
	}
	r.Applied = AppliedFull
	return out, nil
}

const markerTokens = 80

// window keeps the head, prefix (already-rendered messages, may be empty),
// a marker saying what was omitted, and the newest steps from step
// firstStep on that fit the target — at least the last step. It returns
// nil when nothing would be omitted.
func (e *Engine) window(ctx context.Context, rq *job, b budgets, r *Report, prefix []byte, firstStep int) ([]byte, error) {
	c := rq.conv
	if firstStep >= len(c.steps) {
		return nil, nil
	}
	prefixTok := 0
	if len(prefix) > 0 {
		prefixTok = e.counter.Text(rq.limits.Encoding, string(prefix))
	}
	headTok := c.tokens(0, c.head)
	keep := len(c.steps) - 1
	acc := c.steps[keep].tokens
	if headTok+b.overhead+prefixTok+markerTokens+acc > b.window {
		return nil, errTooLarge
	}
	budget := b.target - headTok - b.overhead - prefixTok - markerTokens
	for keep > firstStep && acc+c.steps[keep-1].tokens <= budget {
		keep--
		acc += c.steps[keep].tokens
	}
	from, rest := c.steps[firstStep].first, c.steps[keep].first
	if rest == from {
		return nil, nil
	}
	id := c.hashMessages(from, rest)
	e.storeOriginals(ctx, rq, id, from, rest)
	marker := userMessage(fmt.Sprintf("[condense-proxy: %d earlier messages were omitted here to fit the context window. Originals: GET /v1/condense/originals/%s]", rest-from, id))
	inserted := marker
	if len(prefix) > 0 {
		inserted = append(append(append([]byte{}, prefix...), ','), marker...)
	}
	return rebuild(rq, inserted, rest)
}

func formatLevels(levels map[int]int) string {
	keys := make([]int, 0, len(levels))
	for k := range levels {
		keys = append(keys, k)
	}
	sort.Ints(keys)
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("l%d=%d", k, levels[k]))
	}
	return strings.Join(parts, ",")
}

func cacheState(hits, misses int) string {
	switch {
	case hits+misses == 0:
		return ""
	case misses == 0:
		return "hit"
	case hits == 0:
		return "miss"
	default:
		return "partial"
	}
}

// truncate keeps the head, a marker saying what was omitted, and the
// newest steps that fit the target (at least the last one).
func (e *Engine) truncate(ctx context.Context, rq *job, b budgets, r *Report) ([]byte, error) {
	out, err := e.window(ctx, rq, b, r, nil, 0)
	if errors.Is(err, errTooLarge) {
		addDegraded(r, "request too large to condense: "+errTooLarge.Error())
	}
	if err != nil {
		return nil, err
	}
	if out == nil {
		r.Reason += "; every step is needed verbatim"
		return nil, nil
	}
	r.Applied = AppliedTruncate
	return out, nil
}

// prepare summarizes, in the background, the chunks a coming condensation
// will need, so the request that crosses the threshold finds them cached.
// At most PrepareConcurrency run at once; others are skipped, not queued.
func (e *Engine) prepare(rq *job, rc tokenizer.RequestCount) {
	if e.cache == nil {
		return
	}
	// The work outlives the request, whose body buffer may be reused: it
	// runs on its own copy.
	rq.body = bytes.Clone(rq.body)
	if err := e.parse(rq, rc); err != nil || len(rq.conv.steps) == 0 {
		return
	}
	key := rq.req.Scope + ":" + rq.conv.hashMessages(0, rq.conv.head)
	if _, busy := e.preparing.LoadOrStore(key, struct{}{}); busy {
		return
	}
	select {
	case e.prepareSem <- struct{}{}:
	default:
		e.preparing.Delete(key)
		return
	}
	// Detached from the request: the agent does not wait for this, and it
	// must finish even if this request's client leaves.
	e.bg.Add(1)
	go func() {
		defer e.bg.Done()
		defer func() { <-e.prepareSem; e.preparing.Delete(key) }()
		ctx := context.Background()
		b := e.budgets(rq)
		// Prepare every chunk outside the recent turns: the request that
		// crosses the threshold will be longer than this one and fold at
		// least as much.
		var folded []chunk
		for _, ch := range chunkSteps(rq.conv.steps, b.chunk) {
			if ch.b > len(rq.conv.steps)-b.keepRecent {
				break
			}
			folded = append(folded, ch)
		}
		if len(folded) == 0 {
			return
		}
		items, err := e.summarizeChunks(ctx, rq, folded)
		if err == nil {
			_, err = e.foldLevels(ctx, rq, items, b.summary)
		}
		if err != nil {
			e.log.Warn("background summary preparation failed", "err", err)
			return
		}
		e.log.Debug("summaries prepared ahead", "chunks", len(folded), "summarizer_calls", rq.calls)
	}()
}

// addDegraded appends a fallback's reason to the report.
func addDegraded(r *Report, why string) {
	if r.Degraded == "" {
		r.Degraded = why
	} else if !strings.Contains(r.Degraded, why) {
		r.Degraded += "; " + why
	}
}
