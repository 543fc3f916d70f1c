// Package keepalivetest holds a manual clock for tests of package
// keepalive and of the stacks that use it.
package keepalivetest

import (
	"sort"
	"sync"
	"time"

	"github.com/condense-proxy/condense-proxy/keepalive"
)

// Clock is a keepalive.Clock that moves only when Advance is called. The
// functions that fall due are run by Advance itself, one after the other,
// on its caller's goroutine, so when Advance returns every ping due by
// then has been sent and answered. Safe for concurrent use.
type Clock struct {
	mu     sync.Mutex
	now    time.Time
	seq    int
	timers []*timer
}

var _ keepalive.Clock = (*Clock)(nil)

type timer struct {
	c    *Clock
	when time.Time
	seq  int // order among timers due at the same time
	f    func()
	done bool
}

// New returns a clock reading start.
func New(start time.Time) *Clock { return &Clock{now: start} }

// Now implements keepalive.Clock.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// AfterFunc implements keepalive.Clock: f runs within the Advance that
// passes now+d.
func (c *Clock) AfterFunc(d time.Duration, f func()) keepalive.Timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.seq++
	t := &timer{c: c, when: c.now.Add(d), seq: c.seq, f: f}
	c.timers = append(c.timers, t)
	return t
}

// Stop implements keepalive.Timer.
func (t *timer) Stop() bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	if t.done {
		return false
	}
	t.done = true
	t.c.remove(t)
	return true
}

func (c *Clock) remove(t *timer) {
	for i, x := range c.timers {
		if x == t {
			c.timers = append(c.timers[:i], c.timers[i+1:]...)
			return
		}
	}
}

// Advance moves the clock d forward, running every function that falls
// due on the way (those scheduled while it runs included) at its own
// time, in order.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	end := c.now.Add(d)
	c.mu.Unlock()
	for {
		c.mu.Lock()
		sort.Slice(c.timers, func(i, j int) bool {
			a, b := c.timers[i], c.timers[j]
			if !a.when.Equal(b.when) {
				return a.when.Before(b.when)
			}
			return a.seq < b.seq
		})
		if len(c.timers) == 0 || c.timers[0].when.After(end) {
			c.now = end
			c.mu.Unlock()
			return
		}
		t := c.timers[0]
		c.timers = c.timers[1:]
		t.done = true
		if t.when.After(c.now) {
			c.now = t.when
		}
		c.mu.Unlock()
		t.f()
	}
}

// Pending is how many functions wait to run.
func (c *Clock) Pending() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.timers)
}
