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
