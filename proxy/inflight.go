package proxy

import (
	"context"
	"sync"
	"time"
)

// slots bounds the chat requests being condensed at once: each holds a
// place once its body is read (a slow upload holds only its memory lease,
// bounded by the body budget) until the body to forward is ready (not
// while the upstream answers, nor while the engine waits for the
// summarizer), and one caller holds at most its share of the places at a
// time, so it cannot take them all from the others.
type slots struct {
	places chan struct{}
	max    int // places one caller may hold at once

	mu     sync.Mutex
	byCall map[string]*callerShare
}

// callerShare is one caller's share of the places; refs counts its
// requests between acquire and finish.
type callerShare struct {
	tokens chan struct{}
	refs   int
}

// newSlots returns n places, a caller holding at most all but one of them
// (one, when n is 1).
func newSlots(n int) *slots {
	return &slots{places: make(chan struct{}, n), max: max(n-1, 1), byCall: map[string]*callerShare{}}
}

func (s *slots) shareOf(scope string) *callerShare {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.byCall[scope]
	if c == nil {
		c = &callerShare{tokens: make(chan struct{}, s.max)}
		s.byCall[scope] = c
	}
	c.refs++
	return c
}

func (s *slots) drop(scope string, c *callerShare) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c.refs--; c.refs == 0 {
		delete(s.byCall, scope)
	}
}

// acquire takes a place for scope's request, waiting at most wait for the
// caller's share and a place; false when none freed up in time or ctx
// ended first. The place is the caller's until finish.
func (s *slots) acquire(ctx context.Context, scope string, wait time.Duration) (*held, bool) {
	h := &held{s: s, scope: scope, share: s.shareOf(scope)}
	wctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	if h.Acquire(wctx) != nil {
		h.finish()
		return nil, false
	}
	return h, true
}

func (s *slots) size() int { return cap(s.places) }

// share is how many places one caller may hold at once.
func (s *slots) share() int { return s.max }

// held is one request's place among the slots, as the engine sees it
// (condense.Slot): released while the engine waits for the summarizer,
// taken back before it goes on. Used by one request at a time; finish
// once done.
type held struct {
	s     *slots
	scope string
	share *callerShare
	have  bool
	done  bool
}

// Release gives the place (and the caller's token) back, if held.
func (h *held) Release() {
	if h.have {
		h.have = false
		<-h.s.places
		<-h.share.tokens
	}
}

// Acquire waits for the caller's token and a place, or until ctx ends.
func (h *held) Acquire(ctx context.Context) error {
	if h.have {
		return nil
	}
	select {
	case h.share.tokens <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case h.s.places <- struct{}{}:
		h.have = true
		return nil
	case <-ctx.Done():
		<-h.share.tokens
		return ctx.Err()
	}
}

// finish releases the place, if held, and forgets the request.
func (h *held) finish() {
	h.Release()
	if !h.done {
		h.done = true
		h.s.drop(h.scope, h.share)
	}
}
