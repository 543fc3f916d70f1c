package condense

import (
	"context"
	"sync"
	"time"

	"github.com/condense-proxy/condense-proxy/cache"
)

// Originals are the items a summary, digest or window marker replaced,
// kept under the id the replacement names (GET /v1/condense/originals/
// {id}) for the caller whose scope stored them. Ids are content hashes,
// so a range replaced again on the next turn keeps its id, and each
// original is written once: the engine remembers what it wrote recently.

// originalsKey follows package cache's "kind:scope:rest" convention
// (cache.KindScope): the app's originals store is bounded per scope.
func originalsKey(scope, id string) string { return "orig:" + scope + ":" + id }

// keepOriginal stores an original unless it was written recently.
// original makes it for the store, which is handed it.
func (e *Engine) keepOriginal(ctx context.Context, rq *job, id string, original func() []byte) {
	if e.originals == nil || rq.req.CountOnly {
		return
	}
	key := originalsKey(rq.req.Scope, id)
	if !e.written.add(key, e.now()) {
		return
	}
	ctx = context.WithoutCancel(ctx)
	// original() is made for the store: package cache's stores keep it
	// without a copy. (Their own types only: a Cache that wraps one, to
	// count or change what is set, gets the value through its Set.)
	switch c := e.originals.(type) {
	case *cache.Memory:
		c.SetOwned(ctx, key, original(), e.opts.OriginalsTTL)
	case *cache.Layered:
		c.SetOwned(ctx, key, original(), e.opts.OriginalsTTL)
	default:
		e.originals.Set(ctx, key, original(), e.opts.OriginalsTTL)
	}
}

// storeOriginals keeps the received items [from, to) retrievable under id.
func (e *Engine) storeOriginals(ctx context.Context, rq *job, id string, from, to int) {
	e.keepOriginal(ctx, rq, id, func() []byte {
		return rq.received().originals(from, to)
	})
	e.rememberRange(ctx, rq, id, from, to)
}

// Originals returns the original items behind a summary, digest or
// marker id, for the caller whose scope stored them.
func (e *Engine) Originals(ctx context.Context, scope, id string) ([]byte, bool) {
	if e.originals == nil || id == "" || len(id) > 64 {
		return nil, false
	}
	return e.originals.Get(ctx, originalsKey(scope, id))
}

// recentSet remembers keys written in the last window (bounded): an
// original is written again only after that, well within its TTL, so it
// cannot expire while still referenced by requests.
type recentSet struct {
	mu     sync.Mutex
	window time.Duration
	max    int
	at     map[string]time.Time
	order  []string
}

func newRecentSet(window time.Duration, max int) *recentSet {
	return &recentSet{window: window, max: max, at: map[string]time.Time{}}
}

// add reports whether key was not written within the window, and
// remembers it as written now.
func (s *recentSet) add(key string, now time.Time) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if t, ok := s.at[key]; ok && now.Sub(t) < s.window {
		return false
	}
	if _, ok := s.at[key]; !ok {
		s.order = append(s.order, key)
	}
	s.at[key] = now
	for len(s.order) > s.max {
		delete(s.at, s.order[0])
		s.order = s.order[1:]
	}
	return true
}
