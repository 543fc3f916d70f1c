package proxy

import (
	"context"
	"time"
)

// slots bounds the chat requests being read and condensed at once: each
// holds a place from before its body is read until the body to forward is
// ready (not while the upstream answers). Reading the body inside the
// bound keeps the memory of bodies in flight at most the places ×
// max_body_bytes, whatever the number of connections.
type slots chan struct{}

func newSlots(n int) slots { return make(slots, n) }

// acquire takes a place, waiting at most wait; false when none freed up in
// time or ctx ended first.
func (s slots) acquire(ctx context.Context, wait time.Duration) bool {
	select {
	case s <- struct{}{}:
		return true
	default:
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case s <- struct{}{}:
		return true
	case <-t.C:
		return false
	case <-ctx.Done():
		return false
	}
}

func (s slots) release() { <-s }

func (s slots) size() int { return cap(s) }

// held is one request's place among the slots, as the engine sees it
// (condense.Slot): released while the engine waits for the summarizer,
// taken back before it goes on. Used by one request at a time.
type held struct {
	s    slots
	have bool
}

// Release gives the place back, if held.
func (h *held) Release() {
	if h.have {
		h.have = false
		h.s.release()
	}
}

// Acquire waits for a place, or until ctx ends.
func (h *held) Acquire(ctx context.Context) error {
	if h.have {
		return nil
	}
	select {
	case h.s <- struct{}{}:
		h.have = true
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
