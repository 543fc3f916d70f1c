package keepalive

import "time"

// Clock tells the time and runs a function later: the real clock, or a
// test's (keepalivetest.Clock), which runs due functions when the test
// advances it.
type Clock interface {
	Now() time.Time
	// AfterFunc calls f, on a goroutine of the clock's choosing, once d
	// has passed.
	AfterFunc(d time.Duration, f func()) Timer
}

// Timer is a function scheduled by a Clock.
type Timer interface {
	// Stop cancels the call; false when it has run or is running.
	Stop() bool
}

// realClock is the wall clock.
type realClock struct{}

func (realClock) Now() time.Time { return time.Now() }

func (realClock) AfterFunc(d time.Duration, f func()) Timer { return time.AfterFunc(d, f) }
