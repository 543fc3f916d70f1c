package keepalive

import (
	"strings"

	"github.com/condense-proxy/condense-proxy/view"
)

// Usage is what an answer says of its prompt, in tokens (the codec reads
// it: view.Meter).
type Usage = view.Usage

// readMostly reports whether the prompt was mostly read from the cache:
// what a successful ping shows. A ping that shows mostly a write (or no
// usage at all) found the cache gone.
func readMostly(u Usage) bool {
	return u.Known && u.CacheRead > 0 && u.CacheRead >= u.CacheWrite+u.Uncached
}

// isSSE reports whether a Content-Type is server-sent events.
func isSSE(contentType string) bool {
	return strings.HasPrefix(strings.ToLower(strings.TrimSpace(contentType)), "text/event-stream")
}
