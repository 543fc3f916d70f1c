package proxy

import (
	"crypto/sha256"
	"encoding/hex"
	"sync"
	"unicode/utf8"
)

// MaxModelName is the longest model name, in bytes, the proxy logs or
// hands to its Recorder (see ModelName).
const MaxModelName = 128

// Bounds of the unknown X-Condense-Mode values logged: each is shown at
// most maxModeShown bytes long, and the first maxLoggedModes distinct ones
// get a warning each.
const (
	maxModeShown   = 64
	maxLoggedModes = 32
)

// ModelName is model as the proxy logs and records it: model itself when
// it is at most MaxModelName bytes, else its beginning (cut between UTF-8
// characters), "…" and 8 hex digits of its SHA-256, MaxModelName bytes at
// most in all, so two long names stay apart and a request cannot make a
// log line or the live page as large as its body. The result shares no
// memory with model. ModelName(ModelName(m)) == ModelName(m).
func ModelName(model string) string {
	return clipName(model, MaxModelName)
}

// clipName is ModelName for a bound of max bytes (max > 16).
func clipName(s string, max int) string {
	if len(s) <= max {
		return string([]byte(s)) // a copy: never a view into a request body
	}
	sum := sha256.Sum256([]byte(s))
	tail := "…" + hex.EncodeToString(sum[:4])
	cut := max - len(tail)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + tail
}

// onceSet remembers up to max distinct values, to log each once; past max
// values, new ones are not logged. Safe for concurrent use.
type onceSet struct {
	mu   sync.Mutex
	max  int
	seen map[string]struct{}
}

func newOnceSet(max int) *onceSet { return &onceSet{max: max, seen: map[string]struct{}{}} }

// first reports whether v is seen for the first time and there was room
// to remember it.
func (s *onceSet) first(v string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.seen[v]; ok || len(s.seen) >= s.max {
		return false
	}
	s.seen[v] = struct{}{}
	return true
}
