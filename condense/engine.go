// Package condense decides whether a chat-completions request must be
// condensed and condenses it.
//
// The proxy hands the Engine the raw request body. The Engine reads the
// model name, counts the request's tokens (package tokenizer) against that
// model's threshold, and, when the request is over it (or the caller forces
// it), applies the requested strategy. It returns the body to forward —
// the very same bytes when nothing was done — and a Report of what
// happened. The Engine never turns a request it does not understand into a
// different one: a body that is not valid JSON or has no messages array is
// returned untouched.
package condense

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cespare/xxhash/v2"

	"github.com/condense-proxy/condense-proxy/selective"
	"github.com/condense-proxy/condense-proxy/tokenizer"
	"github.com/condense-proxy/condense-proxy/view"
)

// Modes a request can ask for.
const (
	ModeAuto      = "auto"
	ModeFull      = "full"
	ModeSelective = "selective"
	ModeTruncate  = "truncate"
	ModeOff       = "off"
)

// Applied values of a Report.
const (
	AppliedNone     = "none"
	AppliedFull     = "full"
	AppliedTruncate = "truncate"
)

// ModelLimits is what the Engine needs to know of a model.
type ModelLimits struct {
	Window       int     // context window in input tokens
	Threshold    float64 // fraction of Window that triggers condensing
	Encoding     string  // tokenizer encoding
	SafetyFactor float64 // >= 1; multiplies counts of non-OpenAI models
}

// Models resolves a model name to its limits.
type Models interface {
	Limits(model string) ModelLimits
}

// ModelsFunc adapts a function to Models.
type ModelsFunc func(model string) ModelLimits

// Limits calls f.
func (f ModelsFunc) Limits(model string) ModelLimits { return f(model) }

// Cache is what the Engine needs of a cache (package cache satisfies it).
type Cache interface {
	Get(ctx context.Context, key string) ([]byte, bool)
	Set(ctx context.Context, key string, value []byte, ttl time.Duration)
}

// Observer receives the Engine's events, for metrics. Its methods must not
// block.
type Observer interface {
	Condensed(mode, outcome string, tokensSaved int)
	SummarizerCall(d time.Duration, err error)
}

// Options configures an Engine. Zero values pick the defaults.
type Options struct {
	// Target is the fraction of the window condensing aims for. Default 0.5.
	Target float64
	// PrepareThreshold starts background summaries above this fraction of
	// the window; 0: threshold - 0.1.
	PrepareThreshold float64
	// MaxMessages triggers condensing above this many messages; 0: off.
	MaxMessages int
	// KeepRecentTurns is the minimum number of recent steps kept. Default 3.
	KeepRecentTurns int
	// ChunkTokens is the size of a level-1 chunk. Default 12000.
	ChunkTokens int
	// SummaryBudgetTokens bounds the summaries of one level. Default 8000.
	SummaryBudgetTokens int
	// Summarizer is "llm" or "extractive". Default "llm" (extractive when
	// no Summarizer is given).
	Summarizer string
	// SummaryModel is the summarizer's model; "": the request's model.
	SummaryModel string
	// SummaryTimeout bounds one summarizer call. Default 60s.
	SummaryTimeout time.Duration
	// MaxWait bounds how long one request waits for summaries: past it the
	// request goes on with what is ready (extractive summaries, the
	// window) and says so in its report; the summarizer calls already
	// started finish in the background and are cached. Default 30s.
	MaxWait time.Duration
	// SummaryMaxTokens bounds one summary. Default 2000.
	SummaryMaxTokens int
	// Prompt is the summarizer's system prompt. Default DefaultPrompt.
	Prompt string
	// OriginalsTTL is how long summaries and originals are kept. Default 24h.
	OriginalsTTL time.Duration
	// NegativeTTL is how long a failed summarizer is not called again.
	// Default 30s.
	NegativeTTL time.Duration
	// PrepareConcurrency bounds background summarizations. Default 2.
	PrepareConcurrency int
	// SummarizerConcurrency bounds summarizer calls in flight, across all
	// requests. Default 8.
	SummarizerConcurrency int
	// SelectiveEnabled is the selective feature flag: off, requests asking
	// for selective condensing get full condensing, and auto means full.
	SelectiveEnabled bool
	// Selective configures selective condensing.
	Selective selective.Options
	// MinSavingsTokens is the least selective condensing frees once it
	// starts; 0: 10% of the window.
	MinSavingsTokens int
	// SelectiveSummarizer is "extractive" (deterministic digests, the
	// default) or "llm" (the Summarizer digests each output once; the
	// deterministic digest is the fallback).
	SelectiveSummarizer string
}

func (o *Options) defaults() {
	if o.Target <= 0 {
		o.Target = 0.5
	}
	if o.KeepRecentTurns <= 0 {
		o.KeepRecentTurns = 3
	}
	if o.ChunkTokens <= 0 {
		o.ChunkTokens = 12000
	}
	if o.SummaryBudgetTokens <= 0 {
		o.SummaryBudgetTokens = 8000
	}
	if o.Summarizer == "" {
		o.Summarizer = "llm"
	}
	if o.SummaryTimeout <= 0 {
		o.SummaryTimeout = 60 * time.Second
	}
	if o.MaxWait <= 0 {
		o.MaxWait = 30 * time.Second
	}
	if o.SummaryMaxTokens <= 0 {
		o.SummaryMaxTokens = 2000
	}
	if o.Prompt == "" {
		o.Prompt = DefaultPrompt
	}
	if o.OriginalsTTL <= 0 {
		o.OriginalsTTL = 24 * time.Hour
	}
	if o.NegativeTTL <= 0 {
		o.NegativeTTL = 30 * time.Second
	}
	if o.PrepareConcurrency <= 0 {
		o.PrepareConcurrency = 2
	}
	if o.SummarizerConcurrency <= 0 {
		o.SummarizerConcurrency = 8
	}
}

// Request is one request to condense.
type Request struct {
	Body []byte
	// Codec reads and writes the body's wire format; nil: Deps.Codec.
	Codec view.Codec
	Mode  string // one of the Mode constants; "" means ModeAuto
	Force bool   // condense even under the threshold
	// Scope identifies the caller (a hash of its credentials, never the
	// credentials); cache keys that depend on the conversation include it.
	Scope string
	// Credentials are the caller's own headers (Authorization…) for the
	// summarizer's upstream call. Never logged or cached.
	Credentials http.Header
	// CountOnly asks what would be forwarded without side effects (a
	// count_tokens request): no summarizer call (summaries and digests
	// come from the cache or are extractive), nothing written, no
	// background work, no metrics.
	CountOnly bool
}

// Report says what the Engine did with a request.
type Report struct {
	Model        string
	Counted      bool   // false: the body is not a chat request; nothing else is set
	Applied      string // none, full, selective or truncate
	TokensBefore int    // tokens of the request as received (safety factor applied)
	TokensAfter  int    // tokens of the request forwarded
	Messages     int
	Window       int
	Trigger      int    // tokens above which the request is condensed
	Reason       string // why it was or was not condensed
	Degraded     string // set when a fallback was used
	Summaries    string // summary levels and counts, when summaries were used
	Cache        string // hit, miss or partial, when summaries were used
	Calls        int    // summarizer calls made for this request
	Duration     time.Duration

	// Format is the wire format of the request (chat, messages, responses).
	Format string
	// Conversation identifies the conversation within the caller's scope
	// (a hash of the request's head); "" when the body was not counted.
	Conversation string
	// Changes lists what was replaced, when the request was condensed.
	Changes []Change
	// Received and Forwarded are the shapes of the request as received
	// and as forwarded (Forwarded is nil when nothing changed).
	Received, Forwarded []ItemShape
	// PrefixReused is how many leading tokens of the forwarded request
	// were identical to the conversation's previous forwarded request
	// (-1: no previous request known).
	PrefixReused int

	safety float64 // the model's safety factor, for counts reported
}

// Result is the body to forward and the report.
type Result struct {
	Body []byte
	// Headers are added to the forwarded request (a codec's Finisher may
	// need a beta header for what it set in the body).
	Headers []view.Header
	Report  Report
}

// Engine is safe for concurrent use. Close waits for background work.
type Engine struct {
	sel        *selective.Condenser
	counter    *tokenizer.Counter
	models     Models
	cache      Cache
	summarizer Summarizer
	observer   Observer
	opts       Options
	log        *slog.Logger
	codec      view.Codec
	originals  Cache
	written    *recentSet // originals written lately, not written again
	prefixes   *prefixLog // each conversation's last forwarded request

	flight       flight
	downUntil    sync.Map // backoffKey -> unix nanos: summarizer suspended until then
	backoffSweep atomic.Int64
	prepareSem   chan struct{}
	summarizeSem chan struct{} // summarizer calls in flight
	preparing    sync.Map      // key -> struct{}: conversations being prepared
	bg           sync.WaitGroup
}

// Deps are the Engine's collaborators; all but Counter and Models may be
// nil (no cache: nothing is kept between requests; no summarizer: the
// extractive summaries; no observer: no metrics; no logger: slog.Default;
// no codec: every Request names its own).
type Deps struct {
	Counter *tokenizer.Counter
	Codec   view.Codec // for requests that name none
	// Originals keeps what condensing replaced, apart from the summaries
	// so large originals never push summaries out; nil: Cache.
	Originals  Cache
	Models     Models
	Cache      Cache
	Summarizer Summarizer
	Observer   Observer
	Logger     *slog.Logger
}

// New returns an Engine.
func New(d Deps, opts Options) *Engine {
	opts.defaults()
	if d.Logger == nil {
		d.Logger = slog.Default()
	}
	count := func(s string) int { return d.Counter.Text(tokenizer.O200kBase, s) }
	var selCache selective.Cache
	if d.Cache != nil {
		selCache = d.Cache
	}
	e := &Engine{
		sel:     selective.New(opts.Selective, count, selCache),
		counter: d.Counter, models: d.Models, cache: d.Cache, summarizer: d.Summarizer,
		observer: d.Observer, opts: opts, log: d.Logger, codec: d.Codec,
		prepareSem:   make(chan struct{}, opts.PrepareConcurrency),
		summarizeSem: make(chan struct{}, opts.SummarizerConcurrency),
	}
	e.flight.wg = &e.bg // shared calls outliving their requests are drained on Close
	e.originals = d.Originals
	if e.originals == nil {
		e.originals = d.Cache
	}
	e.written = newRecentSet(opts.OriginalsTTL/4, 100000)
	e.prefixes = newPrefixLog(20000)
	return e
}

// Close waits for background summarizations to finish or ctx to end.
func (e *Engine) Close(ctx context.Context) error {
	done := make(chan struct{})
	go func() { e.bg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("draining background summaries: %w", ctx.Err())
	}
}

// job is one request being condensed.
type job struct {
	req                 Request
	codec               view.Codec
	model               string
	limits              ModelLimits
	in                  *view.Request // the request as scanned
	conv                *conversation // in, parsed (condensing only)
	overhead            int           // tokens outside the items
	hits, misses, calls int
	changes             []Change
	degraded            []string // why summaries fell back, in order
	// stop closes when the request's max_wait is over (nil: never, for
	// background work).
	stop <-chan struct{}
	// shrunk: the newest steps' outputs were digested already (the
	// window does not try again).
	shrunk bool
	// over: the request as received is over the threshold.
	over bool
	// grid holds the received request's step tokens: stride grids are
	// laid on them, so they stay put when digests change the counts.
	grid []int
	// orig is the received request's conversation when conv is a
	// digested copy of it (item for item).
	orig *conversation
	// The last condensed body counted, and its scan: the strategies count
	// their result to check it, and Condense reuses that count.
	countedOut []byte
	out        *view.Request
}

// received is the conversation as received (conv unless conv is a
// digested copy).
func (rq *job) received() *conversation {
	if rq.orig != nil {
		return rq.orig
	}
	return rq.conv
}

// windowed reports whether the conversation has a remembered window cut.
func (e *Engine) windowed(ctx context.Context, rq *job) bool {
	_, ok := e.getCache(ctx, rq.cutKey(false))
	return ok
}

// gridTokens returns the received request's step tokens, on which stride
// grids are laid.
func (rq *job) gridTokens() []int {
	if rq.grid == nil {
		rq.grid = make([]int, len(rq.conv.steps))
		for i, s := range rq.conv.steps {
			rq.grid[i] = s.tokens
		}
	}
	return rq.grid
}

// waitOver reports whether the request's max_wait is over.
func (rq *job) waitOver() bool {
	select {
	case <-rq.stop:
		return true
	default:
		return false
	}
}

// countOut scans a condensed body once per job: asked again for the same
// slice, it returns the scan it already made.
func (e *Engine) countOut(rq *job, out []byte) (*view.Request, error) {
	if len(out) > 0 && len(out) == len(rq.countedOut) && &out[0] == &rq.countedOut[0] {
		return rq.out, nil
	}
	enc := rq.limits.Encoding
	vr, err := rq.codec.Scan(out, func(string) string { return enc })
	if err != nil {
		return nil, err
	}
	rq.countedOut, rq.out = out, vr
	return vr, nil
}

// Condense decides and, when needed, condenses req. It returns an error
// only when ctx ends; any other failure yields the original body and a
// report that says why.
func (e *Engine) Condense(ctx context.Context, req Request) (res Result, err error) {
	start := timeNow()
	// res is the named result, so the deferred report updates reach the
	// caller.
	res = Result{Body: req.Body, Report: Report{Applied: AppliedNone}}
	r := &res.Report
	r.PrefixReused = -1
	var fwd *view.Request // the request forwarded, scanned
	defer func() {
		if fwd != nil && !req.CountOnly {
			// What a provider's prompt cache can serve of this request.
			if n := e.prefixes.reused(req.Scope+"\x00"+r.Conversation, summarizeForPrefix(fwd)); n >= 0 {
				r.PrefixReused = scale(n, r.safety)
			}
		}
		r.Duration = timeNow().Sub(start)
	}()

	observe := e.observe
	if req.CountOnly {
		observe = func(string, string, int) {}
	}
	codec := req.Codec
	if codec == nil {
		codec = e.codec
	}
	if codec == nil {
		r.Reason = "no codec for this request; forwarded unchanged"
		return res, nil
	}
	var lim ModelLimits
	vr, err := codec.Scan(req.Body, func(model string) string {
		lim = e.models.Limits(model)
		return lim.Encoding
	})
	if errors.Is(err, view.ErrNotRequest) {
		r.Reason = "not a " + codec.Format() + " request; forwarded unchanged"
		return res, nil
	}
	if err != nil {
		// Too many messages: the caller refuses the request.
		return res, fmt.Errorf("counting tokens: %w", err)
	}
	model := vr.Model
	r.Model = model
	r.Format = codec.Format()
	r.Counted = true
	r.Messages = len(vr.Items)
	r.Window = lim.Window
	r.TokensBefore = scale(vr.Total, lim.SafetyFactor)
	r.TokensAfter = r.TokensBefore
	r.Trigger = int(float64(lim.Window) * lim.Threshold)
	r.Conversation = conversationID(vr)
	r.safety = lim.SafetyFactor
	fwd = vr

	mode := req.Mode
	if mode == "" {
		mode = ModeAuto
	}
	over := r.TokensBefore > r.Trigger
	tooMany := e.opts.MaxMessages > 0 && r.Messages > e.opts.MaxMessages
	if mode == ModeOff {
		r.Reason = "mode off"
		return res, nil
	}
	rq := &job{req: req, codec: codec, model: model, limits: lim, in: vr, over: over}
	if vr.Untouchable != "" {
		r.Reason = vr.Untouchable + "; forwarded unchanged"
		if over || tooMany || req.Force {
			addDegraded(r, vr.Untouchable+"; not condensed")
		}
		return res, nil
	}
	if !over && !tooMany && !req.Force {
		r.Reason = "under threshold"
		if !req.CountOnly && e.prepareAt(lim) < r.TokensBefore && (mode == ModeFull || mode == ModeAuto) {
			e.prepare(rq)
		}
		return res, nil
	}
	switch {
	case over:
		r.Reason = "over threshold"
	case tooMany:
		r.Reason = "over max_messages"
	default:
		r.Reason = "forced"
	}
	if err := e.parse(rq); err != nil {
		r.Reason += "; " + err.Error() + "; forwarded unchanged"
		observe(mode, "invalid", 0)
		return res, nil
	}
	if mode == ModeSelective && !e.opts.SelectiveEnabled {
		addDegraded(r, "selective condensing is disabled (selective.enabled=false); full condensing used")
		mode = ModeFull
	}
	if mode == ModeAuto && !e.opts.SelectiveEnabled {
		mode = ModeFull
	}
	r.Received = shapes(rq.in)
	wait, cancelWait := context.WithTimeout(context.Background(), e.opts.MaxWait)
	defer cancelWait()
	rq.stop = wait.Done()
	out, err := e.condense(ctx, rq, mode, r)
	if err != nil {
		if ctx.Err() != nil {
			return res, ctx.Err()
		}
		r.Reason += "; " + err.Error() + "; forwarded unchanged"
		observe(mode, "failed", 0)
		return res, nil
	}
	if out == nil {
		observe(mode, "unchanged", 0)
		return res, nil
	}
	after, err := e.countOut(rq, out)
	if err != nil {
		r.Reason += "; condensed body did not re-count; forwarded unchanged"
		observe(mode, "failed", 0)
		return res, nil
	}
	afterTokens := scale(after.Total, lim.SafetyFactor)
	if afterTokens >= r.TokensBefore {
		r.Reason += "; condensing did not shrink the request; forwarded unchanged"
		r.Applied = AppliedNone
		observe(mode, "unchanged", 0)
		return res, nil
	}
	if f, ok := codec.(view.Finisher); ok {
		body, headers, err := f.Finish(rq.in, out)
		if err != nil {
			r.Applied = AppliedNone
			r.Reason += "; " + err.Error() + "; forwarded unchanged"
			observe(mode, "failed", 0)
			return res, nil
		}
		out, res.Headers = body, headers
	}
	res.Body = out
	fwd = after
	r.TokensAfter = afterTokens
	r.Changes = rq.changes
	if after.Parsed || codec.Parse(after) == nil {
		r.Forwarded = shapes(after)
	}
	r.Calls = rq.calls
	observe(r.Applied, "condensed", r.TokensBefore-r.TokensAfter)
	return res, nil
}

func (e *Engine) observe(mode, outcome string, saved int) {
	if e.observer != nil {
		e.observer.Condensed(mode, outcome, saved)
	}
}

func (e *Engine) observeSummarizer(d time.Duration, err error) {
	if e.observer != nil {
		e.observer.SummarizerCall(d, err)
	}
}

func (e *Engine) prepareAt(lim ModelLimits) int {
	f := e.opts.PrepareThreshold
	if f <= 0 {
		f = lim.Threshold - 0.1
	}
	return int(float64(lim.Window) * f)
}

// parse splits the request's items into head and steps.
func (e *Engine) parse(rq *job) error {
	conv, err := newConversation(rq.in, rq.codec)
	if err != nil {
		return err
	}
	rq.conv = conv
	rq.overhead = rq.in.Total - conv.tokens(0, conv.len())
	return nil
}

// conversationID identifies a request's conversation by its head (the
// system prompt and the task), with a fast hash: every request pays it.
func conversationID(r *view.Request) string {
	h := xxhash.New()
	for i := 0; i < r.Head; i++ {
		h.WriteString(r.Raw(i))
		h.Write([]byte{0})
	}
	return fmt.Sprintf("%016x", h.Sum64())
}

// shapes describes a parsed request's items.
func shapes(r *view.Request) []ItemShape {
	out := make([]ItemShape, len(r.Items))
	for i, it := range r.Items {
		out[i] = ItemShape{Role: it.Role, Tokens: it.Tokens}
	}
	return out
}

func (e *Engine) budgets(rq *job) budgets {
	w := rq.limits.Window
	f := rq.limits.SafetyFactor
	if f < 1 {
		f = 1
	}
	// Budgets are compared with raw counts, so the safety factor is taken
	// out of the target here.
	target := int(float64(w) * e.opts.Target / f)
	trigger := int(float64(w) * rq.limits.Threshold / f)
	// A request over the threshold may be condensed to anywhere between
	// the target and the threshold: cuts then stay put while the request
	// grows append-only, and move by a stride (threshold - target) when it
	// crosses the threshold again. A request condensed while under the
	// threshold (forced, too many messages) goes to the target.
	limit := target
	if rq.over && trigger > target {
		limit = trigger
	}
	return budgets{
		target:     target,
		limit:      limit,
		stride:     max(trigger-target, w/50),
		window:     int(float64(w) / f),
		chunk:      e.opts.ChunkTokens,
		summary:    e.opts.SummaryBudgetTokens,
		keepRecent: e.opts.KeepRecentTurns,
		overhead:   rq.overhead,
	}
}

// condense applies mode and returns the new body, or nil to forward the
// original.
func (e *Engine) condense(ctx context.Context, rq *job, mode string, r *Report) ([]byte, error) {
	b := e.budgets(rq)
	// In auto mode a conversation that once needed summaries keeps them:
	// flipping between selective and full would rewrite the prefix.
	stickyKey := "auto:" + rq.req.Scope + ":" + rq.conv.hashMessages(0, rq.conv.head)
	if mode == ModeAuto {
		if _, ok := e.getCache(ctx, stickyKey); ok {
			mode = ModeFull
		}
	}
	if mode == ModeSelective || mode == ModeAuto {
		out, fits, err := e.selective(ctx, rq, b, r)
		if err != nil {
			return nil, err
		}
		if fits && mode == ModeSelective && out != nil && e.windowed(ctx, rq) {
			// A conversation that needed the window keeps it, at its
			// remembered cut: flipping between shapes would rewrite the
			// prefix.
			fits = false
		}
		if fits {
			return out, nil
		}
		if mode == ModeSelective {
			// Still over the threshold: window the digested conversation.
			digested := out
			if out == nil {
				out = rq.in.Body
			}
			w, err := e.truncateBody(ctx, rq, out, b, r)
			if err == nil && w == nil && digested != nil {
				// The window would omit nothing: the digests made stay.
				r.Applied = AppliedSelective
				return digested, nil
			}
			if w != nil {
				addDegraded(r, "selective condensing was not enough; sliding window used")
			}
			return w, err
		}
		mode = ModeFull // auto: summaries on the original conversation
		r.Reason += "; not enough for the target, full condensing used instead"
		if !rq.req.CountOnly {
			e.setCache(ctx, stickyKey, []byte("full"))
		}
	}
	if mode == ModeFull {
		out, err := e.full(ctx, rq, b, r)
		if err != nil || out != nil {
			return out, err
		}
		// Fall through to the sliding window.
		addDegraded(r, "full condensing could not reach the target; sliding window used")
	}
	return e.truncate(ctx, rq, b, r)
}

func scale(n int, factor float64) int {
	if factor <= 1 {
		return n
	}
	return int(float64(n)*factor + 0.5)
}
