package scripted

import (
	"bytes"
	"sync"
	"time"

	"github.com/cespare/xxhash/v2"

	"github.com/condense-proxy/condense-proxy/view"
)

// Prompt caching as the providers do it, so the demo's answers report
// what a provider's would: the longest prefix of a request — everything
// outside its conversation array, then its items in order — that an
// earlier request sent within the cache's lifetime is read from the
// cache; Anthropic writes the rest when the request marks cache_control,
// OpenAI reports no writes. Under the minimum cached prefix nothing is
// read. The cache holds at most maxPrefixes prefixes, forgetting all of
// them when full (the demo serves one user, briefly).
const (
	cacheLife   = 5 * time.Minute
	minCached   = 1024
	maxPrefixes = 1 << 16
)

type promptCache struct {
	mu   sync.Mutex
	seen map[uint64]time.Time
}

// use returns the tokens of r read from the cache and written to it, and
// records r's prefixes as cached at now.
func (c *promptCache) use(r *view.Request, now time.Time) (read, write int) {
	items := 0
	for _, it := range r.Items {
		items += it.Tokens
	}
	outside := max(r.Total-items, 0)
	h := xxhash.New()
	if len(r.Items) > 0 {
		h.Write(r.Body[:r.Array[0]])
		h.Write(r.Body[r.Array[1]:])
	} else {
		h.Write(r.Body)
	}
	keys := make([]uint64, 0, len(r.Items)+1)
	keys = append(keys, h.Sum64())
	for _, it := range r.Items {
		h.Write(r.Body[it.Start:it.End])
		keys = append(keys, h.Sum64())
	}

	c.mu.Lock()
	defer c.mu.Unlock()
	if c.seen == nil || len(c.seen)+len(keys) > maxPrefixes {
		c.seen = make(map[uint64]time.Time, len(keys))
	}
	hit, tokens := 0, outside
	for i, k := range keys {
		if t, ok := c.seen[k]; !ok || now.Sub(t) > cacheLife {
			break
		}
		hit = tokens
		if i < len(r.Items) {
			tokens += r.Items[i].Tokens
		}
	}
	for _, k := range keys {
		c.seen[k] = now
	}
	if hit < minCached {
		hit = 0
	}
	hit = min(hit, r.Total)
	if bytes.Contains(r.Body, []byte(`"cache_control"`)) {
		write = r.Total - hit
	}
	return hit, write
}
