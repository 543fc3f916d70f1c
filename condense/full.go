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
	limit   int     // the request folds further when it outgrows this
	folded  []chunk // complete chunks folded into summaries
	foldEnd int     // first step after the folded chunks
}

// budgets of a condensation, in tokens.
type budgets struct {
	target     int // condense down to this when a cut has to move
	limit      int // a condensed request may grow up to this before a cut moves
	stride     int // how far cuts move at once
	window     int
	chunk      int
	summary    int // summary tokens per level before folding upward
	keepRecent int // steps always kept verbatim
	overhead   int // tools and reply priming
}

// makePlan chooses how many complete chunks fold into summaries. Fold
// points lie on a grid over the chunks, a stride apart from the start of
// the conversation, so they never move as the conversation grows: the
// plan folds up to the first grid point after which the request fits its
// limit (with a full summary budget), and keeps every later step
// verbatim. The condensed request then grows append-only turn after turn
// — its prefix byte-identical, so provider prompt caches stay warm —
// until it outgrows the limit, and the fold jumps a whole stride at once.
// The limit is the target, raised (up to the threshold) where the window
// is so small that folding at the target would come more often than once
// per stride; BENCHMARKS.md has the alternatives measured. Only chunks
// before the newest keepRecent steps may fold.
func makePlan(c *conversation, b budgets) plan {
	chunks := chunkSteps(c.steps, b.chunk)
	most := 0 // chunks that may fold
	for i, ch := range chunks {
		if ch.b <= len(c.steps)-b.keepRecent {
			most = i + 1
		}
	}
	fixed := c.tokens(0, c.head) + b.overhead + b.summary
	total := c.stepTokens(0, len(c.steps))
	// The request folds when it outgrows the target — but never so early
	// that what stays verbatim after a fold (about one open chunk) could
	// outgrow it again in less than a stride: folds then come once per
	// stride at most, at every window size.
	limit := min(b.limit, max(b.target, fixed+b.chunk+b.stride))
	fold := most        // when no grid point fits: everything that may fold
	folded, acc := 0, 0 // tokens folded; since the last grid point
	for i := 0; i < most; i++ {
		n := c.stepTokens(chunks[i].a, chunks[i].b)
		folded += n
		acc += n
		if acc < b.stride {
			continue // not a grid point
		}
		acc = 0
		if fixed+total-folded <= limit {
			fold = i + 1
			break
		}
	}
	p := plan{limit: limit}
	if fold > 0 {
		p.folded = chunks[:fold]
		p.foldEnd = chunks[fold-1].b
	}
	return p
}

// summaryItem is one summary in the condensed request.
type summaryItem struct {
	level    int
	index    int // index among the summaries of its level
	from, to int // message indexes covered
	id       string
	text     string
	tokens   int
	cached   bool
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
		it.text, it.cached = text, cached
		it.tokens = e.counter.Text(rq.limits.Encoding, text)
		if degraded != "" {
			rq.degraded = append(rq.degraded, degraded)
		}
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
		it.text, it.cached = text, cached
		it.tokens = e.counter.Text(rq.limits.Encoding, text)
		if degraded != "" {
			rq.degraded = append(rq.degraded, degraded)
		}
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
