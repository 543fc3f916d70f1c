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
	"unsafe"

	"golang.org/x/sync/singleflight"

	"github.com/condense-proxy/condense-proxy/selective"
	"github.com/condense-proxy/condense-proxy/tokenizer"
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
	Known        bool    // false: Window is the configured default
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
	Body  []byte
	Mode  string // one of the Mode constants; "" means ModeAuto
	Force bool   // condense even under the threshold
	// Scope identifies the caller (a hash of its credentials, never the
	// credentials); cache keys that depend on the conversation include it.
	Scope string
	// Credentials are the caller's own headers (Authorization…) for the
	// summarizer's upstream call. Never logged or cached.
	Credentials http.Header
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
}

// Result is the body to forward and the report.
type Result struct {
	Body   []byte
	Report Report
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

	flight              singleflight.Group
	summarizerDownUntil atomic.Int64
	prepareSem          chan struct{}
	summarizeSem        chan struct{} // summarizer calls in flight
	preparing           sync.Map      // key -> struct{}: conversations being prepared
	bg                  sync.WaitGroup
}

// Deps are the Engine's collaborators; all but Counter and Models may be
// nil (no cache: nothing is kept between requests; no summarizer: the
// extractive summaries; no observer: no metrics; no logger: slog.Default).
type Deps struct {
	Counter    *tokenizer.Counter
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
	return &Engine{
		sel:     selective.New(opts.Selective, count, selCache),
		counter: d.Counter, models: d.Models, cache: d.Cache, summarizer: d.Summarizer,
		observer: d.Observer, opts: opts, log: d.Logger,
		prepareSem:   make(chan struct{}, opts.PrepareConcurrency),
		summarizeSem: make(chan struct{}, opts.SummarizerConcurrency),
	}
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
	model               string
	limits              ModelLimits
	body                []byte
	conv                *conversation
	overhead            int // tokens outside the messages
	counts              tokenizer.RequestCount
	hits, misses, calls int
	// The last condensed body counted, and its count: the strategies count
	// their result to check it, and Condense reuses that count.
	countedOut []byte
	outCount   tokenizer.RequestCount
}

// countOut counts a condensed body once per job: asked again for the same
// slice, it returns the count it already made.
func (e *Engine) countOut(rq *job, out []byte) (tokenizer.RequestCount, error) {
	if len(out) > 0 && len(out) == len(rq.countedOut) && &out[0] == &rq.countedOut[0] {
		return rq.outCount, nil
	}
	rc, err := e.counter.Request(rq.limits.Encoding, out)
	if err != nil {
		return rc, err
	}
	rq.countedOut, rq.outCount = out, rc
	return rc, nil
}

// Condense decides and, when needed, condenses req. It returns an error
// only when ctx ends; any other failure yields the original body and a
// report that says why.
func (e *Engine) Condense(ctx context.Context, req Request) (Result, error) {
	start := timeNow()
	res := Result{Body: req.Body, Report: Report{Applied: AppliedNone}}
	r := &res.Report
	defer func() { r.Duration = timeNow().Sub(start) }()

	var lim ModelLimits
	rc, err := e.counter.RequestFor(req.Body, func(model string) string {
		lim = e.models.Limits(model)
		return lim.Encoding
	})
	model := rc.Model
	if errors.Is(err, tokenizer.ErrNotChat) {
		r.Reason = "not a chat request; forwarded unchanged"
		return res, nil
	}
	if err != nil {
		// Too many messages: the caller refuses the request.
		return res, fmt.Errorf("counting tokens: %w", err)
	}
	r.Model = model
	r.Counted = true
	r.Messages = len(rc.Messages)
	r.Window = lim.Window
	r.TokensBefore = scale(rc.Total, lim.SafetyFactor)
	r.TokensAfter = r.TokensBefore
	r.Trigger = int(float64(lim.Window) * lim.Threshold)

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
	rq := &job{req: req, model: model, limits: lim, body: req.Body}
	if !over && !tooMany && !req.Force {
		r.Reason = "under threshold"
		if e.prepareAt(lim) < r.TokensBefore && (mode == ModeFull || mode == ModeAuto) {
			e.prepare(rq, rc)
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
	if err := e.parse(rq, rc); err != nil {
		r.Reason += "; " + err.Error() + "; forwarded unchanged"
		e.observe(mode, "invalid", 0)
		return res, nil
	}
	if mode == ModeSelective && !e.opts.SelectiveEnabled {
		addDegraded(r, "selective condensing is disabled (selective.enabled=false); full condensing used")
		mode = ModeFull
	}
	if mode == ModeAuto && !e.opts.SelectiveEnabled {
		mode = ModeFull
	}
	rq.counts = rc
	out, err := e.condense(ctx, rq, mode, r)
	if err != nil {
		if ctx.Err() != nil {
			return res, ctx.Err()
		}
		r.Reason += "; " + err.Error() + "; forwarded unchanged"
		e.observe(mode, "failed", 0)
		return res, nil
	}
	if out == nil {
		e.observe(mode, "unchanged", 0)
		return res, nil
	}
	after, err := e.countOut(rq, out)
	if err != nil {
		r.Reason += "; condensed body did not re-count; forwarded unchanged"
		e.observe(mode, "failed", 0)
		return res, nil
	}
	afterTokens := scale(after.Total, lim.SafetyFactor)
	if afterTokens >= r.TokensBefore {
		r.Reason += "; condensing did not shrink the request; forwarded unchanged"
		r.Applied = AppliedNone
		e.observe(mode, "unchanged", 0)
		return res, nil
	}
	res.Body = out
	r.TokensAfter = afterTokens
	r.Calls = rq.calls
	e.observe(r.Applied, "condensed", r.TokensBefore-r.TokensAfter)
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

// parse splits the request's messages into head and steps.
func (e *Engine) parse(rq *job, rc tokenizer.RequestCount) error {
	// The body is never modified (a condensed body is a new slice), so the
	// messages are views into it, not copies.
	js := unsafe.String(unsafe.SliceData(rq.body), len(rq.body))
	raws := make([]string, len(rc.Spans))
	for i, sp := range rc.Spans {
		raws[i] = js[sp[0]:sp[1]]
	}
	conv, err := parseConversation(raws, rc.Messages, rc.Fields)
	if err != nil {
		return err
	}
	rq.conv = conv
	sum := 0
	for _, n := range rc.Messages {
		sum += n
	}
	rq.overhead = rc.Total - sum
	return nil
}

func (e *Engine) budgets(rq *job) budgets {
	w := rq.limits.Window
	f := rq.limits.SafetyFactor
	if f < 1 {
		f = 1
	}
	// Budgets are compared with raw counts, so the safety factor is taken
	// out of the target here.
	return budgets{
		target:     int(float64(w) * e.opts.Target / f),
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
		out, fits, err := e.selective(ctx, rq, b, r, mode == ModeAuto)
		if err != nil {
			return nil, err
		}
		if fits {
			return out, nil
		}
		if mode == ModeSelective {
			// Still over the threshold: window the digested conversation.
			if out == nil {
				out = rq.body
			}
			addDegraded(r, "selective condensing was not enough; sliding window used")
			return e.truncateBody(ctx, rq, out, b, r)
		}
		mode = ModeFull // auto: summaries on the original conversation
		r.Reason += "; not enough for the target, full condensing used instead"
		e.setCache(ctx, stickyKey, []byte("full"))
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
