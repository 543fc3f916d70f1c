package condense

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestFlightSharesOneCall(t *testing.T) {
	var f flight
	var calls atomic.Int32
	release := make(chan struct{})
	fn := func(ctx context.Context) (string, error) {
		calls.Add(1)
		<-release
		return "v", nil
	}
	var wg sync.WaitGroup
	results := make(chan string, 5)
	started := make(chan struct{}, 5)
	for i := 0; i < 5; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			started <- struct{}{}
			v, err, _ := f.do(context.Background(), "k", time.Minute, nil, fn)
			if err != nil {
				t.Error(err)
			}
			results <- v
		}()
	}
	for i := 0; i < 5; i++ {
		<-started
	}
	// Wait until all five are waiting on the one call.
	for waiting(&f, "k") < 5 {
		time.Sleep(time.Millisecond)
	}
	close(release)
	wg.Wait()
	close(results)
	for v := range results {
		if v != "v" {
			t.Errorf("result %q", v)
		}
	}
	if n := calls.Load(); n != 1 {
		t.Errorf("%d calls, want 1", n)
	}
}

func waiting(f *flight, key string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	if c := f.calls[key]; c != nil {
		return c.waiters
	}
	return 0
}

func TestFlightSurvivesTheFirstCallerLeaving(t *testing.T) {
	var f flight
	release := make(chan struct{})
	var cancelled atomic.Bool
	fn := func(ctx context.Context) (string, error) {
		select {
		case <-release:
			return "summary", nil
		case <-ctx.Done():
			cancelled.Store(true)
			return "", ctx.Err()
		}
	}
	first, leave := context.WithCancel(context.Background())
	firstErr := make(chan error, 1)
	go func() {
		_, err, _ := f.do(first, "k", time.Minute, nil, fn)
		firstErr <- err
	}()
	for waiting(&f, "k") < 1 {
		time.Sleep(time.Millisecond)
	}
	second := make(chan string, 1)
	go func() {
		v, err, shared := f.do(context.Background(), "k", time.Minute, nil, fn)
		if err != nil || !shared {
			t.Errorf("second waiter: err %v, shared %v", err, shared)
		}
		second <- v
	}()
	for waiting(&f, "k") < 2 {
		time.Sleep(time.Millisecond)
	}
	leave()
	if err := <-firstErr; !errors.Is(err, context.Canceled) {
		t.Fatalf("first waiter: %v", err)
	}
	close(release)
	if v := <-second; v != "summary" {
		t.Fatalf("second waiter got %q: the call was cancelled with the first caller", v)
	}
	if cancelled.Load() {
		t.Fatal("shared call cancelled while a waiter remained")
	}
}

func TestFlightCancelledWhenEveryWaiterLeft(t *testing.T) {
	var f flight
	cancelled := make(chan struct{})
	fn := func(ctx context.Context) (string, error) {
		<-ctx.Done()
		close(cancelled)
		return "", ctx.Err()
	}
	ctx, leave := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		f.do(ctx, "k", time.Minute, nil, fn)
		close(done)
	}()
	for waiting(&f, "k") < 1 {
		time.Sleep(time.Millisecond)
	}
	leave()
	<-done
	select {
	case <-cancelled:
	case <-time.After(10 * time.Second):
		t.Fatal("call not cancelled after its only waiter left")
	}
}

func TestFlightStopKeepsTheCallRunning(t *testing.T) {
	var f flight
	var wg sync.WaitGroup
	f.wg = &wg
	release := make(chan struct{})
	got := make(chan string, 1)
	fn := func(ctx context.Context) (string, error) {
		select {
		case <-release:
			got <- "done"
			return "late summary", nil
		case <-ctx.Done():
			got <- "cancelled"
			return "", ctx.Err()
		}
	}
	stop := make(chan struct{})
	close(stop)
	ctx, leave := context.WithCancel(context.Background())
	_, err, _ := f.do(ctx, "k", time.Minute, stop, fn)
	if !errors.Is(err, errStoppedWaiting) {
		t.Fatalf("err %v", err)
	}
	leave() // the request goes away; the call must go on
	close(release)
	wg.Wait()
	if v := <-got; v != "done" {
		t.Fatalf("call %s after its waiter stopped waiting", v)
	}
}
