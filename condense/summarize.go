package condense

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
	"unsafe"

	"github.com/condense-proxy/condense-proxy/redact"
	"github.com/condense-proxy/condense-proxy/view"
)

// DefaultPrompt is the built-in summarizer system prompt.
const DefaultPrompt = `You are the condense-proxy summarizer. You write the working memory of a coding agent whose older conversation is being folded away. The agent will continue the task from your summary alone, so keep every fact it needs and drop chatter.

Write these sections, in this order, as terse Markdown bullet lists:
## Task and intent
## Current state and progress
## Decisions and reasons
## Files and code (every path, and what was read or changed in it)
## Errors and how they were resolved
## Pending work and next steps

Keep exact file paths, function and test names, error messages, commands and numbers. Do not invent anything. If a previous summary is given, continue from it: the new summary must stand alone but need not repeat what the previous one said unless it changed.`

// Summarizer writes one summary with an LLM.
type Summarizer interface {
	Summarize(ctx context.Context, in SummaryInput) (string, error)
}

// SummaryInput is one summarizer call.
type SummaryInput struct {
	Model       string
	Prompt      string      // system prompt
	Text        string      // the transcript or the summaries to merge
	Previous    string      // the summary before this one, if any
	Level       int         // 1: a chunk of messages; >1: summaries to merge
	MaxTokens   int         // bound on the answer
	Credentials http.Header // the caller's own credentials
	// Codec is the codec of the request being condensed (nil: none): the
	// summarizer asks the upstream in its API, with the caller's
	// credentials.
	Codec view.Codec
	// Body, when set, is the summary asked in place (inplace.go): the
	// request the conversation was forwarded as, in Codec's API, with the
	// instruction appended. A Summarizer that can (InPlacer) sends it as
	// it is, and falls back to the plain call (Prompt, Text) when it
	// fails; others ignore it.
	Body []byte
}

// InPlacer is an optional capability of a Summarizer: it can send a
// SummaryInput's Body, a request in the API of codec c.
type InPlacer interface {
	InPlace(c view.Codec) bool
}

// UserPrompt is the summarizer's user message for in.
func UserPrompt(in SummaryInput) string {
	var b strings.Builder
	if in.Previous != "" {
		fmt.Fprintf(&b, "Previous summary (context only):\n<previous-summary>\n%s\n</previous-summary>\n\n", in.Previous)
	}
	if in.Level > 1 {
		fmt.Fprintf(&b, "Merge these consecutive summaries into one, oldest first, keeping every path, error and decision that still matters:\n<summaries>\n%s\n</summaries>", in.Text)
	} else {
		fmt.Fprintf(&b, "Summarize this part of the conversation:\n<transcript>\n%s\n</transcript>", in.Text)
	}
	return b.String()
}

// summary returns one summary: from the cache, else from the summarizer
// (one call per key at a time), else the extractive fallback. decorate, if
// not nil, is applied to a new summary before it is cached (so its cost is
// paid once). degraded says why the fallback was used.
// span, for a level-1 summary, is the items [from, to) of the conversation
// as received it summarizes (it may be asked in place: inplace.go). sz
// bounds what the summarizer is asked for.
func (e *Engine) summary(ctx context.Context, rq *job, sz summarySize, level int, span [2]int, contentHash, prevHash, previous string,
	text, fallback func() string, decorate func(string) string) (out string, cached bool, degraded degradation, err error) {
	if decorate == nil {
		decorate = func(s string) string { return s }
	}
	model := e.summaryModel(rq)
	key := summaryKey(rq.req.Scope, model, e.promptHash, level, contentHash, prevHash)
	if s, ok := e.cachedSummary(ctx, rq, model, level, contentHash, prevHash); ok {
		return s, true, degradation{}, nil
	}
	rq.misses++
	if s, why, ok := e.withoutCall(ctx, rq, model, key, func() string { return decorate(fallback()) }); ok {
		return s, false, why, nil
	}
	in := e.fitSummaryInput(SummaryInput{
		Model: model, Prompt: e.opts.Prompt, Text: text(), Previous: previous, Level: level,
		MaxTokens: sz.tokens, Credentials: rq.req.Credentials, Codec: rq.codec,
	})
	s, callErr := e.askSummary(ctx, rq, key, span, in, decorate)
	if callErr == nil {
		return s, false, degradation{}, nil
	}
	why, err := e.summaryFailure(ctx, rq, level, callErr)
	if err != nil {
		return "", false, degradation{}, err
	}
	return decorate(fallback()), false, why, nil
}

// cachedSummary returns the summary of the content cached for model, and
// counts the hit. For auto's cut (summarizeCut) it may be the other
// summarizer's: a chunk keeps the summary it got first, LLM or
// extractive, whichever the allowance then paid for.
func (e *Engine) cachedSummary(ctx context.Context, rq *job, model string, level int, contentHash, prevHash string) (string, bool) {
	models := []string{model}
	if rq.summarizeCut && !rq.notes {
		models = append(models, e.llmModel(rq), "extractive")
	}
	for i, m := range models {
		if i > 0 && m == model {
			continue
		}
		if v, ok := e.getCache(ctx, summaryKey(rq.req.Scope, m, e.promptHash, level, contentHash, prevHash)); ok {
			rq.hits++
			return string(v), true
		}
	}
	return "", false
}

// withoutCall returns the summary written without the summarizer
// (fallback), and why that is Degraded, when this one may not call it
// (ok); key is where a summary kept is cached (keepsWritten).
func (e *Engine) withoutCall(ctx context.Context, rq *job, model, key string, fallback func() string) (s string, why degradation, ok bool) {
	written := e.extractiveOnly() || rq.extractiveSummaries || rq.notes // never asked of the summarizer
	if rq.req.CountOnly || written {
		if !written {
			rq.asks++ // counting stands in for a summary the real run asks for
		}
		s := fallback()
		if e.keepsWritten(rq) {
			e.setCache(ctx, key, []byte(s))
		}
		return s, degradation{}, true
	}
	switch {
	case e.suspended(ctx, rq, model):
		why = degradation{DegradedSummarizerSuspended, "summarizer recently failing; extractive used"}
	case rq.waitOver():
		why = maxWaitDegraded(e.opts.MaxWait)
	default:
		why = e.spendable(rq)
	}
	if why.why == "" {
		return "", degradation{}, false
	}
	return fallback(), why, true
}

// askSummary asks the summarizer for in — a level-1 summary of the items
// span in place when it may be (askInPlace) —, shared with every request
// that needs it at the same time, and adds its cost to the job's spending.
func (e *Engine) askSummary(ctx context.Context, rq *job, key string, span [2]int, in SummaryInput, decorate func(string) string) (string, error) {
	price := -1.0
	if in.Level == 1 && span[1] > 0 {
		if body, p, ok := e.askInPlace(rq, span[0], span[1], in); ok {
			in.Body, price = body, p
		}
	}
	s, err := e.shared(ctx, rq, key, in, decorate)
	if err != nil {
		return "", err
	}
	inPrice, outPrice := e.summaryPrices(rq)
	if price < 0 {
		price = inPrice * float64(e.counter.Text(rq.limits.Encoding, in.Prompt+in.Text+in.Previous))
	}
	rq.spent += price + outPrice*float64(e.counter.Text(rq.limits.Encoding, s))
	return s, nil
}

// summaryFailure says why a summary falls back to the extractive one after
// its call failed (err), or returns the context's error when the request
// ended.
func (e *Engine) summaryFailure(ctx context.Context, rq *job, level int, err error) (degradation, error) {
	if ctx.Err() != nil {
		return degradation{}, ctx.Err()
	}
	if errors.Is(err, errStoppedWaiting) {
		return maxWaitDegraded(e.opts.MaxWait), nil
	}
	if errors.Is(err, errNoSlot) {
		return degradation{DegradedBusy, "summarizer busy; extractive used"}, nil
	}
	// The upstream's error text may echo the key it was sent.
	why := redact.Secrets(err.Error(), credentialValues(rq.req.Credentials)...)
	e.log.Warn("summarizer failed; using the extractive summary", "summary_level", level, "err", why)
	return degradation{DegradedSummarizerFailed, "summarizer failed: " + shorten(why, 80)}, nil
}

// spendable says why this request may not call the summarizer again
// ("" when it may): it spent its budget of calls (max_summarizer_calls),
// or its plan was found to need more than that before any was made.
func (e *Engine) spendable(rq *job) degradation {
	if rq.noCalls != "" {
		return degradation{DegradedCallBudget, rq.noCalls}
	}
	if rq.calls >= e.opts.MaxSummarizerCalls {
		return degradation{DegradedCallBudget, fmt.Sprintf("summarizer call budget reached (condense.max_summarizer_calls: %d per request); extractive summaries used for the rest", e.opts.MaxSummarizerCalls)}
	}
	return degradation{}
}

// fitSummaryInput shapes one summarizer call to the summary model's
// window: the answer's budget at most a quarter of it, and the text cut
// in the middle (the start and the end kept) until the prompt, the
// previous summary, the text and the answer fit.
func (e *Engine) fitSummaryInput(in SummaryInput) SummaryInput {
	lim := e.models.Limits(in.Model)
	if lim.Window <= 0 {
		return in
	}
	f := max(lim.SafetyFactor, 1)
	window := int(float64(lim.Window) / f)
	in.MaxTokens = min(in.MaxTokens, max(window/4, 64))
	count := func(s string) int { return e.counter.Text(lim.Encoding, s) }
	// The frame: the system prompt, the user message's wrapping, the
	// previous summary, the answer and a margin for the format.
	frame := count(in.Prompt) + count(UserPrompt(SummaryInput{Previous: in.Previous, Level: in.Level})) + in.MaxTokens + 64
	room := window - frame
	if room <= 0 && in.Previous != "" {
		// The previous summary is context only: it goes first.
		in.Previous = ""
		frame = count(in.Prompt) + count(UserPrompt(SummaryInput{Level: in.Level})) + in.MaxTokens + 64
		room = window - frame
	}
	room = max(room, 64)
	n := count(in.Text)
	for i := 0; n > room && i < 8; i++ {
		keep := len(in.Text) * room / n * 9 / 10
		in.Text = cutMiddle(in.Text, keep)
		n = count(in.Text)
	}
	return in
}

// cutMiddle keeps about keep bytes of s, its start and its end, on rune
// boundaries, with a marker where the middle was.
func cutMiddle(s string, keep int) string {
	if len(s) <= keep {
		return s
	}
	const marker = "\n[… middle omitted to fit the summarizer's window …]\n"
	half := max(keep/2, 0)
	head, tail := half, len(s)-half
	for head > 0 && !utf8.RuneStart(s[head]) {
		head--
	}
	for tail < len(s) && !utf8.RuneStart(s[tail]) {
		tail++
	}
	return s[:head] + marker + s[tail:]
}

func maxWaitDegraded(d time.Duration) degradation {
	return degradation{DegradedMaxWait, fmt.Sprintf("condense.max_wait (%s) reached; extractive summaries used where the summarizer had not answered", d)}
}

// shared runs one summarizer call for key, shared by every request that
// needs it at the same time (and, through the cache's lock, by replicas),
// and caches the result. The call runs on its own context; a failure
// (other than waiting for a slot) backs the summarizer off for this
// caller and model.
func (e *Engine) shared(ctx context.Context, rq *job, key string, in SummaryInput, decorate func(string) string) (out string, err error) {
	backoff := backoffKey(rq.req.Scope, in.Model)
	// Waiting holds none of the caller's places.
	if slot := rq.req.Slot; slot != nil {
		slot.Release()
		defer func() {
			if aerr := slot.Acquire(ctx); aerr != nil && err == nil {
				err = aerr
			}
		}()
	}
	// The shared call may wait for the replicas' lock, then for a slot,
	// then call: each bounded by the summary timeout.
	v, err, _ := e.flight.do(ctx, key, 2*e.opts.SummaryTimeout+e.lockWait(), rq.stop, func(cctx context.Context) (string, error) {
		if v, ok := e.getCache(cctx, key); ok {
			return string(v), nil
		}
		release := e.lock(cctx, key)
		defer release()
		if v, ok := e.getCache(cctx, key); ok { // another replica finished it
			return string(v), nil
		}
		s, err := e.callSummarizer(cctx, in)
		if err == nil && strings.TrimSpace(s) == "" {
			err = errors.New("empty summary")
		}
		if err != nil {
			if !errors.Is(err, errNoSlot) && !errors.Is(err, context.Canceled) {
				e.backOff(cctx, backoff)
			}
			return "", err
		}
		s = decorate(s)
		return e.addCache(cctx, key, s), nil
	})
	rq.calls++
	return v, err
}

// backoffKey scopes the summarizer's back-off to one caller and model: a
// caller with a bad key, or a model it cannot use, degrades only its own
// summaries.
func backoffKey(scope, model string) string { return scope + "\x00" + model }

// backoffWriteTimeout bounds writing a back-off mark to the cache.
const backoffWriteTimeout = 5 * time.Second

// backOff stops summarizer calls for key for NegativeTTL, on every replica
// (the mark is in the cache too, under a hash of the key: it holds the
// caller's scope). The back-off ends by the engine's clock (Deps.Now): the
// mark holds its end, and the cache's own expiry only forgets it. ctx is
// the failed call's, often ended by the failure itself (its timeout): the
// mark is written detached from it, within backoffWriteTimeout.
func (e *Engine) backOff(ctx context.Context, key string) {
	now := e.now()
	until := now.Add(e.opts.NegativeTTL).UnixNano()
	e.downUntil.Store(key, until)
	if e.cache != nil {
		wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), backoffWriteTimeout)
		e.cache.Set(wctx, backoffCacheKey(key), strconv.AppendInt(nil, until, 10), e.opts.NegativeTTL)
		cancel()
	}
	// Keep the map small: forget expired entries now and then.
	if e.backoffSweep.Add(1)%256 == 0 {
		e.downUntil.Range(func(k, v any) bool {
			if v.(int64) <= now.UnixNano() {
				e.downUntil.Delete(k)
			}
			return true
		})
	}
}

// suspended reports whether summarizer calls for this caller and model
// are suspended after a failure here or on another replica. The cache is
// asked within ctx, the request's: a client gone ends the lookup.
func (e *Engine) suspended(ctx context.Context, rq *job, model string) bool {
	key := backoffKey(rq.req.Scope, model)
	if v, ok := e.downUntil.Load(key); ok && v.(int64) > e.now().UnixNano() {
		return true
	}
	if e.cache == nil {
		return false
	}
	v, ok := e.cache.Get(ctx, backoffCacheKey(key))
	if !ok {
		return false
	}
	until, err := strconv.ParseInt(string(v), 10, 64)
	if err != nil {
		return true // a mark without its end (an older replica's): the cache's expiry ends it
	}
	return until > e.now().UnixNano()
}

// backoffCacheKey is the cache key of a back-off mark.
func backoffCacheKey(key string) string { return "backoff:" + textHash(key) }

// errNoSlot: every summarizer slot stayed busy for the whole timeout.
// That is a wait, not a failure of the summarizer.
var errNoSlot = errors.New("no summarizer slot free")

// callSummarizer makes one summarizer call within the summary timeout and
// the bound on calls in flight, and records it.
func (e *Engine) callSummarizer(ctx context.Context, in SummaryInput) (string, error) {
	slot := time.NewTimer(e.opts.SummaryTimeout)
	defer slot.Stop()
	select {
	case e.summarizeSem <- struct{}{}:
		defer func() { <-e.summarizeSem }()
	case <-ctx.Done():
		if errors.Is(ctx.Err(), context.Canceled) {
			return "", ctx.Err()
		}
		// Out of time while still waiting: a wait, not a failure.
		return "", fmt.Errorf("%w: %w", errNoSlot, ctx.Err())
	case <-slot.C:
		return "", fmt.Errorf("%w within %s", errNoSlot, e.opts.SummaryTimeout)
	}
	cctx, cancel := context.WithTimeout(ctx, e.opts.SummaryTimeout)
	defer cancel()
	start := e.now()
	out, err := e.summarizer.Summarize(cctx, in)
	e.observeSummarizer(e.now().Sub(start), err)
	return out, err
}

func (e *Engine) summaryModel(rq *job) string {
	if rq.notes {
		return StandInNotes
	}
	if rq.extractiveSummaries {
		return "extractive"
	}
	return e.llmModel(rq)
}

// llmModel is the summarizer's model ("extractive" when there is no LLM
// summarizer).
func (e *Engine) llmModel(rq *job) string {
	if e.opts.Summarizer == "extractive" || e.summarizer == nil {
		return "extractive"
	}
	if e.opts.SummaryModel != "" {
		return e.opts.SummaryModel
	}
	return rq.model
}

func (e *Engine) getCache(ctx context.Context, key string) ([]byte, bool) {
	if e.cache == nil {
		return nil, false
	}
	return e.cache.Get(ctx, key)
}

// Currenter is an optional capability of the cache: the value the shared
// store holds now, never a copy this process kept (cache.Layered's memory
// layer). A conversation's state that changes in place — its window cut —
// is read so; values that never change once written (summaries, frozen
// decisions) may come from a copy.
type Currenter interface {
	Current(ctx context.Context, key string) ([]byte, bool)
}

// getState reads a value that changes in place (Currenter).
func (e *Engine) getState(ctx context.Context, key string) ([]byte, bool) {
	if c, ok := e.cache.(Currenter); ok {
		return c.Current(ctx, key)
	}
	return e.getCache(ctx, key)
}

func (e *Engine) setCache(ctx context.Context, key string, v []byte) {
	if e.cache != nil {
		e.cache.Set(context.WithoutCancel(ctx), key, v, e.opts.OriginalsTTL)
	}
}

// Adder is an optional capability of the cache: set-if-absent across
// replicas, returning the value the key holds afterwards.
type Adder interface {
	Add(ctx context.Context, key string, value []byte, ttl time.Duration) (stored []byte, ok bool)
}

// addCache stores a summarizer's text under key unless a replica stored
// one first, and returns the text to use: the first one written, so every
// replica builds the same summaries (and cache keys) on it.
func (e *Engine) addCache(ctx context.Context, key, s string) string {
	if a, ok := e.cache.(Adder); ok {
		if stored, ok := a.Add(context.WithoutCancel(ctx), key, []byte(s), e.opts.OriginalsTTL); ok {
			return string(stored)
		}
		return s
	}
	e.setCache(ctx, key, []byte(s))
	return s
}

// Locker is an optional capability of the cache: a short lock shared by
// proxy replicas, so they do not write the same summary twice.
type Locker interface {
	Lock(ctx context.Context, key string, ttl time.Duration) (release func(), ok bool)
}

// lockWait is the longest lock waits for another replica's call.
func (e *Engine) lockWait() time.Duration {
	if _, ok := e.cache.(Locker); ok {
		return e.opts.SummaryTimeout
	}
	return 0
}

// lock waits briefly for the cross-replica lock of key; it gives up (and
// does the work anyway) after the summary timeout.
func (e *Engine) lock(ctx context.Context, key string) func() {
	l, ok := e.cache.(Locker)
	if !ok {
		return func() {}
	}
	deadline := e.now().Add(e.opts.SummaryTimeout)
	for {
		release, got := l.Lock(ctx, key, e.opts.SummaryTimeout+5*time.Second)
		if got {
			return release
		}
		if e.now().After(deadline) || ctx.Err() != nil {
			return func() {}
		}
		if _, done := e.getCache(ctx, key); done {
			return func() {}
		}
		select {
		case <-ctx.Done():
			return func() {}
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// SummarizerFunc adapts a function to Summarizer.
type SummarizerFunc func(ctx context.Context, in SummaryInput) (string, error)

// Summarize calls f.
func (f SummarizerFunc) Summarize(ctx context.Context, in SummaryInput) (string, error) {
	return f(ctx, in)
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
func summaryKey(scope, model, promptHash string, level int, contentHash, prevHash string) string {
	h := sha256.Sum256([]byte(strings.Join([]string{scope, model, promptHash, fmt.Sprint(level), contentHash, prevHash}, "\x00")))
	return "sum:" + hex.EncodeToString(h[:16])
}

func textHash(s string) string {
	// Read in place: a summary's text is hashed on every request that
	// carries it, and sha256 only reads.
	h := sha256.Sum256(unsafe.Slice(unsafe.StringData(s), len(s)))
	return hex.EncodeToString(h[:8])
}

// summarizeChunks returns the level-1 summaries of the folded chunks, from
// the cache or the summarizer, each building on the one before it, each
// of size sz.
func (e *Engine) summarizeChunks(ctx context.Context, rq *job, sz summarySize, folded []chunk) ([]summaryItem, error) {
	items := make([]summaryItem, 0, len(folded))
	prev, prevHash := "", ""
	for i, ch := range folded {
		from, to := rq.conv.steps[ch.a].first, rq.conv.steps[ch.b-1].end
		// A chunk is named by its messages as received: auto summarizes
		// the conversation as digested, and a digest the frontier adds
		// later must not make a new summary (a bust at the cut).
		content := rq.received().hashMessages(from, to)
		it := summaryItem{level: 1, index: i, from: from, to: to, id: content}
		// The Files section is built once, by whichever of the two needs
		// it first (the extractive summary writes it, an LLM's gets it
		// added): it reads every item of the chunk.
		files := new(filesMemo)
		text, cached, degraded, err := e.summary(ctx, rq, sz, 1, [2]int{from, to}, content, prevHash, prev, func() string {
			return rq.conv.transcript(from, to)
		}, func() string {
			if rq.notes {
				return fitSummary(rq.conv.note(from, to, files), sz.tokens, sz.facts)
			}
			return fitSummary(rq.conv.extractive(from, to, files), sz.tokens, sz.facts)
		}, func(s string) string {
			// Both summarizers end with the deterministic Files section.
			if strings.Contains(s, "## Files") {
				return s
			}
			if f := files.get(func() string { return rq.conv.filesOf(from, to) }); f != "" {
				s = strings.TrimSpace(s) + "\n" + f
			}
			return s
		})
		if err != nil {
			return nil, fmt.Errorf("summarizing chunk %d: %w", i, err)
		}
		items = append(items, e.keepSummary(ctx, rq, it, text, cached, degraded))
		prev, prevHash = text, textHash(text)
	}
	return items, nil
}

// keepSummary returns it with its text (cached: read from the cache;
// degraded: why it fell back, kept with the job's), keeps the originals
// of a new one, and hands it to the memory.
func (e *Engine) keepSummary(ctx context.Context, rq *job, it summaryItem, text string, cached bool, degraded degradation) summaryItem {
	it.text, it.cached = text, cached
	it.tokens = e.counter.Text(rq.limits.Encoding, text)
	if degraded.why != "" {
		rq.degraded = append(rq.degraded, degraded)
	}
	if !cached {
		e.storeOriginals(ctx, rq, it.id, it.from, it.to)
	}
	e.rememberSummary(ctx, rq, it)
	return it
}

// foldLevels folds the oldest complete groups of summaries into the next
// level until the summaries fit the budget, each of size sz (a merge of a
// cut's stand-ins keeps its facts in its share of the budget:
// mergedFactTokens).
func (e *Engine) foldLevels(ctx context.Context, rq *job, sz summarySize, items []summaryItem, budget int) ([]summaryItem, error) {
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
		var text string
		var cached bool
		var degraded degradation
		var err error
		if sz.facts > 0 && !rq.notes {
			text, cached = e.mergeFromMessages(ctx, rq, sz.tokens, level, content, it.from, it.to, func() int {
				return mergedFactTokens(rq.received(), sz.facts, items, group, budget)
			})
		} else {
			text, cached, degraded, err = e.summary(ctx, rq, sz, level, [2]int{}, content, "", "", func() string { return joined }, func() string {
				// Counted only when the merge is written (notes' share).
				return fitSummary(mergeExtractive(parts), sz.tokens, mergedFactTokens(rq.received(), sz.facts, items, group, budget))
			}, nil)
		}
		if err != nil {
			return nil, fmt.Errorf("folding level %d summaries: %w", level-1, err)
		}
		next := append([]summaryItem{}, items[:pos]...)
		next = append(next, e.keepSummary(ctx, rq, it, text, cached, degraded))
		items = append(next, items[pos+groupSize:]...)
	}
	return items, nil
}

// mergeFromMessages returns the merge (level) of a cut's stand-ins, the
// messages [from, to) as received, named content: the extractive summary
// of those messages — whoever wrote the stand-ins it replaces, an LLM's
// prose merged would keep what a merge writes, not the facts — with facts
// in the room facts() gives, and whether it was cached. A merge is never
// asked of the summarizer: the first written (an LLM's, by a version
// before this one) is kept.
func (e *Engine) mergeFromMessages(ctx context.Context, rq *job, tokens, level int, content string, from, to int, facts func() int) (string, bool) {
	if s, ok := e.cachedSummary(ctx, rq, "extractive", level, content, ""); ok {
		return s, true
	}
	rq.misses++
	// Counted only when the merge is written: a cached one (the steady
	// state) costs no pass over the messages.
	s := fitSummary(rq.conv.extractive(from, to, new(filesMemo)), tokens, facts())
	if e.keepsWritten(rq) {
		e.setCache(ctx, summaryKey(rq.req.Scope, "extractive", e.promptHash, level, content, ""), []byte(s))
	}
	return s, false
}

// keepsWritten says whether a summary written without the summarizer is
// cached: counting never pays for a summary — the text stands in for one
// not written yet — unless the extractive summarizer is the summarizer;
// then the text is the summary, and observe mode keeps it (in its caller's
// scope) as auto would, so a later cut that reuses a fold's summaries
// finds them, as auto's does.
func (e *Engine) keepsWritten(rq *job) bool {
	return !rq.req.CountOnly || rq.req.observing && e.extractiveOnly()
}

// extractiveOnly says whether the extractive summarizer is the engine's.
func (e *Engine) extractiveOnly() bool {
	return e.summarizer == nil || e.opts.Summarizer == "extractive"
}

// mergedFactTokens bounds the facts a merge of group keeps, of a cut's
// stand-ins (items) within budget: the share of the budget its messages
// are of all the stand-ins cover, and never less than one summary's fact
// room — so the oldest merge of a long session, which covers most of it,
// keeps its errors and decisions instead of a summary's worth. Other
// summaries keep no fact room (facts, theirs, is 0). c is the
// conversation as received.
func mergedFactTokens(c *conversation, facts int, items, group []summaryItem, budget int) int {
	if facts == 0 {
		return facts
	}
	all := c.tokens(items[0].from, items[len(items)-1].to)
	part := c.tokens(group[0].from, group[len(group)-1].to)
	if all <= 0 {
		return facts
	}
	return max(facts, int(float64(budget)*float64(part)/float64(all)))
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
		// Every line goes on: fitSummary keeps what matters most.
		b.WriteString(strings.TrimSpace(body))
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

// summaryNote renders items, the summaries of the replaced items before
// item rest, as a note, the memory's steps relevant to them beside them,
// and returns it with its text.
func (e *Engine) summaryNote(ctx context.Context, rq *job, items []summaryItem, replaced, rest int) ([]byte, string) {
	summary := renderSummary(items, replaced, rq.notes)
	text := summary + e.relevantBlock(ctx, rq, summaryAnchor(items), rest, summary)
	return rq.codec.Note(text), text
}

// addSummaryChanges records items among the job's changes, the tokens
// they replace as c counts them, and returns how many there are of each
// level.
func (rq *job) addSummaryChanges(items []summaryItem, c *conversation) map[int]int {
	levels := map[int]int{}
	for _, it := range items {
		levels[it.level]++
		rq.changes = append(rq.changes, Change{Kind: ChangeSummary, ID: it.id, Level: it.level, From: it.from, To: it.to,
			TokensBefore: c.tokens(it.from, it.to), TokensAfter: it.tokens, Text: it.text})
	}
	return levels
}

// reportSummaries reports the request's summaries (levels: how many of
// each level), how many the cache held, and the first reason one fell
// back: what a fold summarized later repeats it.
func (rq *job) reportSummaries(r *Report, levels map[int]int) {
	r.Summaries = formatLevels(levels)
	r.Cache, r.SummariesCached, r.SummariesMade = cacheState(rq.hits, rq.misses), rq.hits, rq.misses
	if len(rq.degraded) > 0 {
		addDegraded(r, rq.degraded[0].kind, rq.degraded[0].why)
	}
}

// renderSummary is the message that replaces the folded messages.
func renderSummary(items []summaryItem, replaced int, notes bool) string {
	var b strings.Builder
	fmt.Fprintf(&b, "<conversation-summary replaces=\"%d earlier messages\">\n", replaced)
	if notes {
		b.WriteString("The earlier part of this conversation was condensed by condense-proxy. The notes below say what was there, oldest first; search it with the condense_recall tool, or fetch the original messages of each with GET /v1/condense/originals/{id}.\n\n")
	} else {
		b.WriteString("The earlier part of this conversation was condensed by condense-proxy. The summaries below replace it, oldest first; the original messages of each can be fetched with GET /v1/condense/originals/{id}.\n\n")
	}
	for _, it := range items {
		fmt.Fprintf(&b, "<summary id=\"%s\" level=\"%d\" messages=\"%d-%d\">\n%s\n</summary>\n", it.id, it.level, it.from, it.to-1, strings.TrimSpace(it.text))
	}
	b.WriteString("</conversation-summary>")
	return b.String()
}
