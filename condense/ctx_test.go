package condense

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/condense-proxy/condense-proxy/cache"
)

// stuckBackoffCache is a cache whose lookups of back-off marks wait for
// their context to end (a Redis that stopped answering), telling when one
// began.
type stuckBackoffCache struct {
	*cache.Memory
	asked chan struct{}
}

func (c stuckBackoffCache) Get(ctx context.Context, key string) ([]byte, bool) {
	if strings.HasPrefix(key, "backoff:") {
		select {
		case c.asked <- struct{}{}:
		default:
		}
		<-ctx.Done()
		return nil, false
	}
	return c.Memory.Get(ctx, key)
}

// TestRequestWaitsEndWithTheRequest: the lookups a request makes on its
// way to the summarizer are asked within the request's context: the
// client leaving ends a request stuck on the cache, which returns the
// context's error instead of waiting on.
func TestRequestWaitsEndWithTheRequest(t *testing.T) {
	c := stuckBackoffCache{Memory: cache.NewMemory(64 << 20), asked: make(chan struct{}, 1)}
	sum := &blockingSummarizer{release: make(chan struct{}), started: make(chan struct{}, 1)}
	close(sum.release)
	e := New(Deps{Counter: counter, Models: limits(16000), Cache: c, Summarizer: sum},
		Options{MaxSummarizerCalls: 1000, ChunkTokens: 4000})
	defer e.Close(context.Background())
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := e.Condense(ctx, Request{Codec: chatCodec, Body: body(t, session(3, 60)), Scope: "s", Mode: ModeFull})
		done <- err
	}()
	select {
	case <-c.asked:
	case err := <-done:
		t.Fatalf("condensed without asking the cache for a back-off mark: %v", err)
	}
	cancel() // the client leaves
	select {
	case err := <-done:
		if err == nil {
			t.Error("the request whose client left returned no error")
		}
	case <-time.After(time.Minute):
		t.Fatal("a request whose client left still waits on the cache")
	}
}
