// Package tokenizer counts the tokens of text, and keeps the counts of the
// items of requests so a history an agent resends is not counted again.
// It knows no wire format: the codecs (codec/...) say what an item is and
// how it is counted, and ask the Counter for the counts of its texts and
// for its cache (Cached, CachedHash, Lookup).
//
// A Counter holds one BPE encoder per encoding for the whole process (the
// BPE data is embedded in the binary by github.com/tiktoken-go/tokenizer;
// nothing is downloaded) and two bounded caches: one of per-item counts
// keyed by a hash of the item's raw JSON (ItemHash), so a history the agent
// resends costs only hashing, and one of per-segment counts, so long
// repetitive text (logs, separator lines, runs of one character) is
// tokenized once.
//
// Text is cut into segments at exact pre-tokenizer boundaries (after a
// newline followed by a non-space character), so the sum of the segment
// counts equals the count of the whole text. Only a line longer than
// maxSegment bytes is cut inside, which can change its count by about one
// token per cut.
//
// Texts of parallelMin bytes or more are counted on all cores at once.
//
// Counting does not run tiktoken-go's regular expression: split.go cuts
// text into the same pieces by hand and bpe.go merges them on the
// library's own vocabulary, behind a process-wide cache of piece counts;
// the counts are the library's (fast_test.go compares them). When the
// library is not the version they mirror, the library counts.
//
// A Counter is safe for concurrent use.
package tokenizer

import (
	"errors"
	"fmt"
	"hash/maphash"
	"runtime"
	"sync"
	"sync/atomic"
	"unicode"
	"unicode/utf8"

	tk "github.com/tiktoken-go/tokenizer"
)

// Encodings the Counter supports.
const (
	O200kBase  = "o200k_base"
	CL100kBase = "cl100k_base"
)

// maxSegment is the longest piece of text tokenized in one call.
const maxSegment = 2048

type codec interface {
	Count(string) (int, error)
}

// encoder counts the tokens of text under one encoding: by the fast path
// (split and bpe, which mirror tiktoken-go) when the library is the one
// they were written against, else by tiktoken-go's codec.
type encoder struct {
	lib   codec     // tiktoken-go's codec: the reference
	split *splitter // nil: the fast path is off
	bpe   bpe
}

func newEncoder(encoding string, e tk.Encoding) *encoder {
	c, err := tk.Get(e)
	if err != nil {
		panic(fmt.Sprintf("tokenizer: %s: %v", encoding, err))
	}
	enc := &encoder{lib: c}
	if ranks, pattern, ok := libraryInternals(c); ok && pattern == splitPatterns[encoding] {
		enc.split, enc.bpe = newSplitter(encoding), newBPE(ranks)
	}
	return enc
}

var o200k = sync.OnceValue(func() *encoder { return newEncoder(O200kBase, tk.O200kBase) })

var encoders = map[string]func() *encoder{
	O200kBase:  o200k,
	CL100kBase: sync.OnceValue(func() *encoder { return newEncoder(CL100kBase, tk.Cl100kBase) }),
}

// count returns the number of tokens of s, fast reporting whether the fast
// path counted it.
func (e *encoder) count(s string) (n int, fast bool) {
	if e.split == nil {
		return countCodec(e.lib, s), false
	}
	if !utf8.ValidString(s) {
		s = string([]rune(s)) // as regexp2 reads it
	}
	for i := 0; i < len(s); {
		end := e.split.piece(s, i)
		if end < 0 {
			_, size := runeAt(s, i)
			i += size
			continue
		}
		n += e.bpe.count(s[i:end])
		i = end
	}
	return n, true
}

// Options configures a Counter. Zero values pick the defaults.
type Options struct {
	// MessageCacheEntries bounds the per-item count cache. Default 200000.
	MessageCacheEntries int
	// SegmentCacheEntries bounds the per-segment count cache. Default 100000.
	SegmentCacheEntries int
	// MaxMessages refuses requests with more items (CheckItems returns
	// ErrTooManyMessages) before any counting; 0: no limit.
	MaxMessages int
}

// Counter counts tokens. Safe for concurrent use; create one per process.
type Counter struct {
	maxMessages int
	seed        maphash.Seed
	items       *countCache
	segments    *countCache
	// slowTexts counts the texts counted by tiktoken-go's codec rather
	// than the fast path (tests check it stays zero).
	slowTexts atomic.Int64
	lastKeys  atomic.Pointer[itemKeyBase]
}

// New returns a Counter.
func New(o Options) *Counter {
	if o.MessageCacheEntries <= 0 {
		o.MessageCacheEntries = 200000
	}
	if o.SegmentCacheEntries <= 0 {
		o.SegmentCacheEntries = 100000
	}
	return &Counter{
		maxMessages: o.MaxMessages,
		seed:        maphash.MakeSeed(),
		items:       newCountCache(o.MessageCacheEntries),
		segments:    newCountCache(o.SegmentCacheEntries),
	}
}

func getEncoder(encoding string) *encoder {
	if encoding == O200kBase {
		return o200k()
	}
	if f, ok := encoders[encoding]; ok {
		return f()
	}
	return encoders[O200kBase]()
}

// Text returns the number of tokens in s under encoding (o200k_base when
// encoding is unknown).
func (c *Counter) Text(encoding, s string) int {
	if s == "" {
		return 0
	}
	cd := getEncoder(encoding)
	if len(s) >= parallelMin {
		if workers := runtime.GOMAXPROCS(0); workers > 1 {
			return c.parallelText(cd, encoding, s, workers)
		}
	}
	return c.serialText(cd, encoding, s)
}

// parallelMin is the text length from which Text spreads the work over
// the available cores, so that no text of up to 1 MB takes long to count.
const parallelMin = 256 << 10

func (c *Counter) serialText(cd *encoder, encoding, s string) int {
	total := 0
	for len(s) > 0 {
		n := segmentEnd(s)
		total += c.segment(cd, encoding, s[:n])
		s = s[n:]
	}
	return total
}

// parallelText cuts s into workers parts at segment boundaries and counts
// them at once; the sum is what serialText would return.
func (c *Counter) parallelText(cd *encoder, encoding, s string, workers int) int {
	parts := make([]string, 0, workers)
	for len(parts) < workers-1 && len(s) > 0 {
		want := len(s) / (workers - len(parts))
		end := 0
		for end < want {
			end += segmentEnd(s[end:])
		}
		parts = append(parts, s[:end])
		s = s[end:]
	}
	parts = append(parts, s)
	counts := make([]int, len(parts))
	var wg sync.WaitGroup
	for i, p := range parts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			counts[i] = c.serialText(cd, encoding, p)
		}()
	}
	wg.Wait()
	total := 0
	for _, n := range counts {
		total += n
	}
	return total
}

func (c *Counter) segment(cd *encoder, encoding, seg string) int {
	if len(seg) < 64 {
		return c.count(cd, seg)
	}
	var h maphash.Hash
	h.SetSeed(c.seed)
	h.WriteString(encoding)
	h.WriteByte(0)
	h.WriteString(seg)
	key := h.Sum64()
	if n, ok := c.segments.get(key); ok {
		return n
	}
	n := c.count(cd, seg)
	c.segments.put(key, n)
	return n
}

// count counts s with cd, noting a text the fast path did not count.
func (c *Counter) count(cd *encoder, s string) int {
	n, fast := cd.count(s)
	if !fast {
		c.slowTexts.Add(1)
	}
	return n
}

// countCodec counts s with tiktoken-go's codec.
func countCodec(cd codec, s string) int {
	n, err := cd.Count(s)
	if err != nil {
		// Count fails only in strict UTF-8 mode, which we do not use; a
		// byte-based estimate is the safe answer if it ever does.
		return len(s)/3 + 1
	}
	return n
}

// segmentEnd returns the length of the first segment of s: up to and
// including the last newline, within maxSegment bytes, that is followed by a
// character that starts a new piece (see startsWithSpace); failing
// that, maxSegment bytes cut at a rune boundary.
func segmentEnd(s string) int {
	if len(s) <= maxSegment {
		return len(s)
	}
	for i := maxSegment - 1; i > 0; i-- {
		if s[i] == '\n' && !startsWithSpace(s[i+1:]) {
			return i + 1
		}
	}
	n := maxSegment
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	if n == 0 {
		n = maxSegment
	}
	return n
}

// startsWithSpace reports whether a cut before s could split a
// pre-tokenizer piece: s starts with white space (runs of it are one
// piece), with '/' (o200k's punctuation pieces take newlines and slashes
// after them) or with an invalid byte.
func startsWithSpace(s string) bool {
	r, _ := utf8.DecodeRuneInString(s)
	return unicode.IsSpace(r) || r == '/' || r == utf8.RuneError
}

// countCache is a bounded map from a 64-bit hash to a count, with two
// generations: when the current one is full it becomes the old one and the
// previous old one is dropped. Entries used from the old generation move
// back to the current one, so what is in use stays.
type countCache struct {
	mu       sync.Mutex
	max      int
	cur, old map[uint64]int
}

func newCountCache(maxEntries int) *countCache {
	half := max(maxEntries/2, 1)
	return &countCache{max: half, cur: make(map[uint64]int), old: make(map[uint64]int)}
}

func (c *countCache) get(k uint64) (int, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.getLocked(k)
}

// getLocked is get with c.mu held.
func (c *countCache) getLocked(k uint64) (int, bool) {
	if n, ok := c.cur[k]; ok {
		return n, true
	}
	if n, ok := c.old[k]; ok {
		c.putLocked(k, n)
		return n, true
	}
	return 0, false
}

func (c *countCache) put(k uint64, n int) {
	c.mu.Lock()
	c.putLocked(k, n)
	c.mu.Unlock()
}

func (c *countCache) putLocked(k uint64, n int) {
	if len(c.cur) >= c.max {
		c.old = c.cur
		c.cur = make(map[uint64]int, c.max)
	}
	c.cur[k] = n
}

func (c *countCache) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.cur) + len(c.old)
}

// ErrTooManyMessages is returned by CheckItems for requests with more
// items than Options.MaxMessages; nothing is counted.
var ErrTooManyMessages = errors.New("too many messages")
