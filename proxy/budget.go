package proxy

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// errBudgetBusy: the bytes a body needs were not free within the wait.
var errBudgetBusy = errors.New("body memory budget in use by other requests")

// overBudgetError: a body needs more than the whole budget, so it can
// never be read.
type overBudgetError struct{ need, max int64 }

func (e *overBudgetError) Error() string {
	return fmt.Sprintf("body needs %d bytes, more than the whole body budget (%d)", e.need, e.max)
}

// budget bounds the bytes of request bodies in memory across all requests:
// the buffers bodies are read and decoded into take their bytes from it
// before they are allocated, and give them back when the body has been
// handed to the upstream. Safe for concurrent use.
type budget struct {
	max int64

	mu    sync.Mutex
	used  int64
	freed chan struct{} // closed and replaced whenever bytes are given back
}

func newBudget(max int64) *budget {
	return &budget{max: max, freed: make(chan struct{})}
}

// take takes n bytes, waiting at most wait for them to be given back by
// other requests. It fails with errBudgetBusy when the wait ends first,
// with an *overBudgetError when n alone is over the budget, and with
// ctx's error when ctx ends first.
func (b *budget) take(ctx context.Context, n int64, wait time.Duration) error {
	if n <= 0 {
		return nil
	}
	if n > b.max {
		return &overBudgetError{need: n, max: b.max}
	}
	var timeout <-chan time.Time
	for {
		b.mu.Lock()
		if b.used+n <= b.max {
			b.used += n
			b.mu.Unlock()
			return nil
		}
		freed := b.freed
		b.mu.Unlock()
		if timeout == nil {
			t := time.NewTimer(wait)
			defer t.Stop()
			timeout = t.C
		}
		select {
		case <-freed:
		case <-timeout:
			return errBudgetBusy
		case <-ctx.Done():
			return fmt.Errorf("waiting for body memory: %w", ctx.Err())
		}
	}
}

// give returns n bytes.
func (b *budget) give(n int64) {
	if n <= 0 {
		return
	}
	b.mu.Lock()
	b.used -= n
	close(b.freed)
	b.freed = make(chan struct{})
	b.mu.Unlock()
}

// inUse returns the bytes taken now.
func (b *budget) inUse() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.used
}

// lease is one request's share of the budget. grow and shrink are called
// by the request's goroutine only; release may be called from any
// goroutine (the transport closing the forwarded body, the handler
// returning), and only its first call gives the bytes back.
type lease struct {
	b    *budget
	ctx  context.Context
	wait time.Duration
	held int64
	once sync.Once
}

func (b *budget) lease(ctx context.Context, wait time.Duration) *lease {
	return &lease{b: b, ctx: ctx, wait: wait}
}

// grow takes n more bytes (see budget.take).
func (l *lease) grow(n int64) error {
	if err := l.b.take(l.ctx, n, l.wait); err != nil {
		return err
	}
	l.held += n
	return nil
}

// shrink gives n of the lease's bytes back.
func (l *lease) shrink(n int64) {
	n = min(n, l.held)
	l.held -= n
	l.b.give(n)
}

// release gives every byte of the lease back, once.
func (l *lease) release() {
	l.once.Do(func() { l.b.give(l.held) })
}
