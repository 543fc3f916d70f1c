package condense

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"time"
)

// groupSize is how many summaries of one level fold into one of the next.
const groupSize = 4

// chunk is a range of steps [a, b) summarized together.
type chunk struct{ a, b int }

// chunkSteps cuts steps into chunks of about chunkTokens, from the first
// step on: a chunk closes at the first step boundary where it holds
// chunkTokens or more. Boundaries depend only on the steps before them, so
// they stay put as the conversation grows. Only complete chunks are
// returned; the open last one is not.
func chunkSteps(steps []step, chunkTokens int) []chunk {
	var out []chunk
	start, acc := 0, 0
	for i, s := range steps {
		acc += s.tokens
		if acc >= chunkTokens {
			out = append(out, chunk{start, i + 1})
			start, acc = i+1, 0
		}
	}
	return out
}

// plan is where a request is cut.
type plan struct {
	tailStart int     // first step kept verbatim at the end
	folded    []chunk // complete chunks before tailStart, folded into summaries
	foldEnd   int     // first step after the folded chunks
}

// budgets of a condensation, in tokens.
type budgets struct {
	target        int // condense down to this
	window        int
	chunk         int
	summary       int // summary tokens per level before folding upward
	keepRecent    int // steps always kept verbatim
	overhead      int // tools and reply priming
	safetyPercent int // not used for planning; counts are raw
}

// makePlan chooses the verbatim tail and the chunks to fold. The tail is at
// least keepRecent steps and as many more as fit beside the head, the
// summary budget and one open chunk within the target.
func makePlan(c *conversation, b budgets) plan {
	headTok := c.tokens(0, c.head)
	recent := b.target - headTok - b.overhead - b.summary - b.chunk
	tail := len(c.steps)
	acc := 0
	for tail > 0 {
		s := c.steps[tail-1]
		if len(c.steps)-tail >= b.keepRecent && acc+s.tokens > recent {
			break
		}
		acc += s.tokens
		tail--
	}
	p := plan{tailStart: tail}
	chunks := chunkSteps(c.steps, b.chunk)
	need, most := 0, 0 // chunks that must fold; chunks that may fold
	for i, ch := range chunks {
		if ch.b <= tail {
			need = i + 1
		}
		if ch.b <= len(c.steps)-b.keepRecent {
			most = i + 1
		}
	}
	// Fold in batches of foldBatch chunks: the summary then changes once
	// per batch instead of once per chunk, so consecutive requests share
	// their prefix longer (provider prompt caches stay warm). Folding more
	// than needed only shrinks the request further below the target.
	fold := need
	if need > 0 && need%foldBatch != 0 {
		fold = min(most, need+foldBatch-need%foldBatch)
	}
	p.folded = chunks[:fold]
	if fold > 0 {
		p.foldEnd = chunks[fold-1].b
	}
	return p
}

// foldBatch is how many chunks fold at once (see makePlan).
const foldBatch = 3

// summaryItem is one summary in the condensed request.
type summaryItem struct {
	level    int
	index    int // index among the summaries of its level
	from, to int // message indexes covered
	id       string
	text     string
	tokens   int
	cached   bool
	degraded string
}

// summaryKey builds the cache key of a summary. The scope is a hash of the
// caller's credentials, never the credentials.
func summaryKey(scope, model string, level int, contentHash, prevHash string) string {
	h := sha256.Sum256([]byte(strings.Join([]string{scope, model, promptVersion, fmt.Sprint(level), contentHash, prevHash}, "\x00")))
	return "sum:" + hex.EncodeToString(h[:16])
}

func textHash(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:8])
}

// summarizeChunks returns the level-1 summaries of the folded chunks, from
// the cache or the summarizer, each building on the one before it.
func (e *Engine) summarizeChunks(ctx context.Context, rq *job, folded []chunk) ([]summaryItem, error) {
	items := make([]summaryItem, 0, len(folded))
	prev, prevHash := "", ""
	for i, ch := range folded {
		from, to := rq.conv.steps[ch.a].first, rq.conv.steps[ch.b-1].end
		content := rq.conv.hashMessages(from, to)
		it := summaryItem{level: 1, index: i, from: from, to: to, id: content}
		text, cached, degraded, err := e.summary(ctx, rq, 1, content, prevHash, prev, func() string {
			return rq.conv.transcript(from, to)
		}, func() string {
			return fitSummary(rq.conv.extractive(from, to), e.perSummaryTokens())
		}, func(s string) string {
			// Both summarizers end with the deterministic Files section.
			if files := rq.conv.filesOf(from, to); files != "" && !strings.Contains(s, "## Files") {
				s = strings.TrimSpace(s) + "\n" + files
			}
			return s
		})
		if err != nil {
			return nil, fmt.Errorf("summarizing chunk %d: %w", i, err)
		}
		it.text, it.cached, it.degraded = text, cached, degraded
		it.tokens = e.counter.Text(rq.limits.Encoding, text)
		if !cached {
			e.storeOriginals(ctx, rq, it.id, from, to)
		}
		items = append(items, it)
		prev, prevHash = text, textHash(text)
	}
	return items, nil
}

// foldLevels folds the oldest complete groups of summaries into the next
// level until the summaries fit the budget.
func (e *Engine) foldLevels(ctx context.Context, rq *job, items []summaryItem, budget int) ([]summaryItem, error) {
	total := func() int {
		n := 0
		for _, it := range items {
			n += it.tokens
		}
		return n
	}
	for total() > budget {
		pos, ok := foldableGroup(items)
		if !ok {
			break
		}
		group := items[pos : pos+groupSize]
		var parts []string
		var ids []string
		for _, g := range group {
			parts = append(parts, g.text)
			ids = append(ids, g.id)
		}
		joined := strings.Join(parts, "\n\n---\n\n")
		level := group[0].level + 1
		content := textHash(strings.Join(ids, ","))
		it := summaryItem{level: level, index: group[0].index / groupSize, from: group[0].from, to: group[len(group)-1].to, id: content}
		text, cached, degraded, err := e.summary(ctx, rq, level, content, "", "", func() string { return joined }, func() string {
			return fitSummary(mergeExtractive(parts), e.perSummaryTokens())
		}, nil)
		if err != nil {
			return nil, fmt.Errorf("folding level %d summaries: %w", level-1, err)
		}
		it.text, it.cached, it.degraded = text, cached, degraded
		it.tokens = e.counter.Text(rq.limits.Encoding, text)
		if !cached {
			e.storeOriginals(ctx, rq, it.id, it.from, it.to)
		}
		next := append([]summaryItem{}, items[:pos]...)
		next = append(next, it)
		items = append(next, items[pos+groupSize:]...)
	}
	return items, nil
}

// perSummaryTokens bounds one summary, so that a few of them per level fit
// the summary budget.
func (e *Engine) perSummaryTokens() int {
	return max(200, min(e.opts.SummaryMaxTokens, e.opts.SummaryBudgetTokens/groupSize))
}

// foldableGroup finds the oldest run of groupSize summaries of the lowest
// level that starts at an aligned index (so groups never shift).
func foldableGroup(items []summaryItem) (int, bool) {
	best, bestLevel := -1, 0
	for i := 0; i+groupSize <= len(items); i++ {
		it := items[i]
		if it.index%groupSize != 0 {
			continue
		}
		ok := true
		for j := 1; j < groupSize; j++ {
			if items[i+j].level != it.level || items[i+j].index != it.index+j {
				ok = false
				break
			}
		}
		if ok && (best < 0 || it.level < bestLevel) {
			best, bestLevel = i, it.level
		}
	}
	return best, best >= 0
}

// mergeExtractive folds summaries without an LLM: each keeps its first
// lines, the Files sections are merged.
func mergeExtractive(parts []string) string {
	var b strings.Builder
	files := newFileLog()
	for _, p := range parts {
		body, fs, _ := strings.Cut(p, "## Files\n")
		lines := strings.Split(strings.TrimSpace(body), "\n")
		if len(lines) > 12 {
			lines = append(lines[:12], fmt.Sprintf("[… %d lines condensed …]", len(lines)-12))
		}
		b.WriteString(strings.Join(lines, "\n"))
		b.WriteString("\n")
		for _, l := range strings.Split(fs, "\n") {
			kind, list, ok := strings.Cut(strings.TrimPrefix(l, "- "), ": ")
			if !ok {
				continue
			}
			list, _, _ = strings.Cut(list, " (+")
			for _, f := range strings.Split(list, ", ") {
				files.add(f, kind)
			}
		}
	}
	b.WriteString(files.section())
	return b.String()
}

// storeOriginals keeps messages [from, to) retrievable under id.
func (e *Engine) storeOriginals(ctx context.Context, rq *job, id string, from, to int) {
	if e.cache == nil {
		return
	}
	arr := append(rq.conv.appendRaw([]byte{'['}, from, to), ']')
	e.cache.Set(context.WithoutCancel(ctx), originalsKey(rq.req.Scope, id), arr, e.opts.OriginalsTTL)
}

func originalsKey(scope, id string) string { return "orig:" + scope + ":" + id }

// Originals returns the original messages behind a summary or marker id,
// for the caller whose scope stored them.
func (e *Engine) Originals(ctx context.Context, scope, id string) ([]byte, bool) {
	if e.cache == nil || id == "" || len(id) > 64 {
		return nil, false
	}
	return e.cache.Get(ctx, originalsKey(scope, id))
}

// renderSummary is the message that replaces the folded messages.
func renderSummary(items []summaryItem, replaced int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "<conversation-summary replaces=\"%d earlier messages\">\n", replaced)
	b.WriteString("The earlier part of this conversation was condensed by condense-proxy. The summaries below replace it, oldest first; the original messages of each can be fetched with GET /v1/condense/originals/{id}.\n\n")
	for _, it := range items {
		fmt.Fprintf(&b, "<summary id=\"%s\" level=\"%d\" messages=\"%d-%d\">\n%s\n</summary>\n", it.id, it.level, it.from, it.to-1, strings.TrimSpace(it.text))
	}
	b.WriteString("</conversation-summary>")
	return b.String()
}

// timeNow is replaced in tests.
var timeNow = time.Now
