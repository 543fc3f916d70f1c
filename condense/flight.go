package condense

import (
	"context"
	"errors"
	"sync"
	"time"
)

// flight runs one call per key at a time, shared by every request that
// needs it. Unlike a plain singleflight, the call runs on its own context
// — detached from whichever request started it, bounded by its timeout —
// so one client leaving does not fail it for the others: it is cancelled
// only when every waiter has left. A waiter that merely stops waiting
// (its request's max_wait ran out) leaves the call running, so its result
// still reaches the cache for the next request.
//
// Safe for concurrent use.
type flight struct {
	mu    sync.Mutex
	calls map[string]*flightCall
	wg    *sync.WaitGroup // tracks running calls, for shutdown
	// base, when set, cancels every call when it ends (the engine's
	// shutdown, past its drain deadline).
	base context.Context
}

type flightCall struct {
	done    chan struct{}
	val     string
	err     error
	waiters int  // waiters that may still want the result
	kept    bool // a waiter stopped waiting without giving up on the call
	cancel  context.CancelFunc
}

// errStoppedWaiting is returned to a waiter whose wait ended (stop) while
// the shared call goes on.
var errStoppedWaiting = errors.New("stopped waiting for the summarizer")

// do returns the result of fn for key, starting fn unless a call for key
// is running. fn gets a context bounded by timeout and cancelled when
// every waiter has left. ctx is the waiter's request: when it ends, the
// waiter leaves (ctx.Err()). stop, if not nil, ends the wait without
// leaving (errStoppedWaiting): the call keeps running to completion.
// shared reports that the call was started by another waiter.
func (f *flight) do(ctx context.Context, key string, timeout time.Duration, stop <-chan struct{},
	fn func(ctx context.Context) (string, error)) (val string, err error, shared bool) {
	f.mu.Lock()
	if f.calls == nil {
		f.calls = map[string]*flightCall{}
	}
	c, shared := f.calls[key]
	if !shared {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), timeout)
		stop := func() bool { return false }
		if f.base != nil {
			// Shutdown past its drain deadline cancels the call.
			stop = context.AfterFunc(f.base, cancel)
		}
		c = &flightCall{done: make(chan struct{}), cancel: cancel}
		f.calls[key] = c
		if f.wg != nil {
			f.wg.Add(1)
		}
		go func() {
			v, err := fn(cctx)
			stop()
			cancel()
			f.mu.Lock()
			c.val, c.err = v, err
			if f.calls[key] == c {
				delete(f.calls, key)
			}
			f.mu.Unlock()
			close(c.done)
			if f.wg != nil {
				f.wg.Done()
			}
		}()
	}
	c.waiters++
	f.mu.Unlock()

	select {
	case <-c.done:
		return c.val, c.err, shared
	case <-stop:
		f.mu.Lock()
		c.kept = true
		f.mu.Unlock()
		return "", errStoppedWaiting, shared
	case <-ctx.Done():
		f.mu.Lock()
		c.waiters--
		if c.waiters == 0 && !c.kept {
			// Nobody wants it any more: stop paying for it, and let the
			// next request start afresh.
			c.cancel()
			if f.calls[key] == c {
				delete(f.calls, key)
			}
		}
		f.mu.Unlock()
		return "", ctx.Err(), shared
	}
}
