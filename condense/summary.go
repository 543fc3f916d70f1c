package condense

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// promptVersion is part of every summary's cache key; bump it when the
// built-in prompt changes.
const promptVersion = "p1"

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
	// Format is the wire format of the request being condensed ("chat",
	// "messages", "responses"): the summarizer asks the upstream in it,
	// with the caller's credentials.
	Format string
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
func (e *Engine) summary(ctx context.Context, rq *job, level int, contentHash, prevHash, previous string,
	text, fallback func() string, decorate func(string) string) (out string, cached bool, degraded string, err error) {
	if decorate == nil {
		decorate = func(s string) string { return s }
	}

	model := e.summaryModel(rq)
	key := summaryKey(rq.req.Scope, model, level, contentHash, prevHash)
	if v, ok := e.getCache(ctx, key); ok {
		rq.hits++
		return string(v), true, "", nil
	}
	rq.misses++
	if rq.req.CountOnly {
		// Counting never pays for a summary: the extractive text stands
		// in for one not written yet, and is not kept.
		return decorate(fallback()), false, "", nil
	}
	if e.summarizer == nil || e.opts.Summarizer == "extractive" {
		s := decorate(fallback())
		e.setCache(ctx, key, []byte(s))
		return s, false, "", nil
	}
	if e.backingOff(rq, model) {
		return decorate(fallback()), false, "summarizer recently failing; extractive used", nil
	}
	if rq.waitOver() {
		return decorate(fallback()), false, maxWaitDegraded(e.opts.MaxWait), nil
	}
	in := SummaryInput{
		Model: model, Prompt: e.opts.Prompt, Text: text(), Previous: previous, Level: level,
		MaxTokens: e.perSummaryTokens(), Credentials: rq.req.Credentials, Format: rq.codec.Format(),
	}
	s, callErr := e.shared(ctx, rq, key, in, decorate)
	if callErr != nil {
		if ctx.Err() != nil {
			return "", false, "", ctx.Err()
		}
		if errors.Is(callErr, errStoppedWaiting) {
			return decorate(fallback()), false, maxWaitDegraded(e.opts.MaxWait), nil
		}
		if errors.Is(callErr, errNoSlot) {
			return decorate(fallback()), false, "summarizer busy; extractive used", nil
		}
		e.log.Warn("summarizer failed; using the extractive summary", "level", level, "err", callErr)
		return decorate(fallback()), false, "summarizer failed: " + shorten(callErr.Error(), 80), nil
	}
	return s, false, "", nil
}

func maxWaitDegraded(d time.Duration) string {
	return fmt.Sprintf("condense.max_wait (%s) reached; extractive summaries used where the summarizer had not answered", d)
}

// shared runs one summarizer call for key, shared by every request that
// needs it at the same time (and, through the cache's lock, by replicas),
// and caches the result. The call runs on its own context; a failure
// (other than waiting for a slot) backs the summarizer off for this
// caller and model.
func (e *Engine) shared(ctx context.Context, rq *job, key string, in SummaryInput, decorate func(string) string) (string, error) {
	backoff := backoffKey(rq.req.Scope, in.Model)
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
				e.backOff(backoff)
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

// backOff stops summarizer calls for key for NegativeTTL, on every replica
// (the mark is in the cache too, under a hash of the key: it holds the
// caller's scope).
func (e *Engine) backOff(key string) {
	now := timeNow()
	e.downUntil.Store(key, now.Add(e.opts.NegativeTTL).UnixNano())
	if e.cache != nil {
		e.cache.Set(context.Background(), backoffCacheKey(key), []byte("1"), e.opts.NegativeTTL)
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

// backingOff reports whether summarizer calls for this caller and model
// are suspended after a failure here or on another replica.
func (e *Engine) backingOff(rq *job, model string) bool {
	key := backoffKey(rq.req.Scope, model)
	if v, ok := e.downUntil.Load(key); ok && v.(int64) > timeNow().UnixNano() {
		return true
	}
	if e.cache == nil {
		return false
	}
	_, ok := e.cache.Get(context.Background(), backoffCacheKey(key))
	return ok
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
	start := timeNow()
	out, err := e.summarizer.Summarize(cctx, in)
	e.observeSummarizer(timeNow().Sub(start), err)
	return out, err
}

func (e *Engine) summaryModel(rq *job) string {
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
	deadline := timeNow().Add(e.opts.SummaryTimeout)
	for {
		release, got := l.Lock(ctx, key, e.opts.SummaryTimeout+5*time.Second)
		if got {
			return release
		}
		if timeNow().After(deadline) || ctx.Err() != nil {
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
