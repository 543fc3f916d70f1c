package condense

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"strings"
	"sync"
	"unsafe"

	"github.com/cespare/xxhash/v2"

	"github.com/condense-proxy/condense-proxy/view"
)

// step is the unit cuts respect: a user (or system) message alone, or an
// assistant message with the items answering its calls (and whatever the
// codec glued to it).
type step struct {
	first, end int // item indexes [first, end)
	tokens     int
}

// conversation is a parsed request: its items in head and steps.
type conversation struct {
	req   *view.Request
	codec view.Codec
	head  int    // items [0, head) are the head
	steps []step // the items after the head, in steps

	// textMu guards texts: the texts of the large items, decoded once
	// however many summaries read them (text).
	textMu sync.Mutex
	texts  map[int]view.Text

	// breaks[i] counts the items k in (0, i] the body does not hold
	// joined to the item before by a single comma (originals), made once.
	breaksOnce sync.Once
	breaks     []int32

	// hashes remembers hashMessages across requests (nil: each is
	// hashed; the engine's conversations have its memory: Engine.parse).
	hashes *rangeHashes
}

// largeText is the raw size from which an item's text is kept once
// decoded (conversation.text).
const largeText = 64 << 10

// text returns item i's text (Codec.Text); a large item's is decoded once
// per conversation, however many summaries (a dry run, the fold, their
// Files) read it.
func (c *conversation) text(i int) view.Text {
	if len(c.req.Raw(i)) < largeText {
		return c.codec.Text(c.req, i)
	}
	c.textMu.Lock()
	defer c.textMu.Unlock()
	t, ok := c.texts[i]
	if !ok {
		t = c.codec.Text(c.req, i)
		if c.texts == nil {
			c.texts = map[int]view.Text{}
		}
		c.texts[i] = t
	}
	return t
}

var errInvalid = view.ErrInvalid

// newConversation parses r with codec and splits its items into head and
// steps: a step starts at an item that is not glued to the one before it
// and runs while items are glued to it. A result answering no pending
// call of its step, or a call left unanswered at the end of its step,
// makes the request invalid (the API would reject it).
func newConversation(r *view.Request, codec view.Codec) (*conversation, error) {
	if !r.Parsed {
		if err := codec.Parse(r); err != nil {
			return nil, err
		}
	}
	c := &conversation{req: r, codec: codec, head: r.Head}
	items := r.Items
	c.steps = make([]step, 0, max(len(items)-c.head, 0))
	for j := c.head; j < len(items); {
		if items[j].Glue {
			return nil, fmt.Errorf("%w: item %d (%s) follows no tool call", errInvalid, j, items[j].Role)
		}
		s := step{first: j, end: j}
		var pending map[string]bool // made at the step's first call
		for s.end < len(items) && (s.end == j || items[s.end].Glue) {
			it := items[s.end]
			for _, id := range it.Answers {
				if !pending[id] {
					return nil, fmt.Errorf("%w: item %d answers no pending call", errInvalid, s.end)
				}
				delete(pending, id)
			}
			for _, call := range it.Calls {
				if call.ID == "" {
					return nil, fmt.Errorf("%w: item %d has a tool call without id", errInvalid, s.end)
				}
				if pending == nil {
					pending = map[string]bool{}
				}
				pending[call.ID] = true
			}
			s.tokens += it.Tokens
			s.end++
		}
		if len(pending) > 0 {
			return nil, fmt.Errorf("%w: item %d has %d unanswered tool calls", errInvalid, j, len(pending))
		}
		c.steps = append(c.steps, s)
		j = s.end
	}
	return c, nil
}

func (c *conversation) len() int { return len(c.req.Items) }

func (c *conversation) role(i int) string { return c.req.Items[i].Role }

func (c *conversation) tokens(from, to int) int {
	n := 0
	for _, it := range c.req.Items[from:to] {
		n += it.Tokens
	}
	return n
}

// stepTokens is the tokens of steps [from, to).
func (c *conversation) stepTokens(from, to int) int {
	n := 0
	for _, s := range c.steps[from:to] {
		n += s.tokens
	}
	return n
}

// joined reports whether the body holds items [from, to) as one run,
// each joined to the one before by a single comma (none empty).
func (c *conversation) joined(from, to int) bool {
	c.breaksOnce.Do(func() {
		items, body := c.req.Items, c.req.Body
		c.breaks = make([]int32, len(items))
		for k := 1; k < len(items); k++ {
			prev, it := &items[k-1], &items[k]
			c.breaks[k] = c.breaks[k-1]
			if !(prev.Start < prev.End && it.Start < it.End && it.Start == prev.End+1 && body[prev.End] == ',') {
				c.breaks[k]++
			}
		}
	})
	return c.breaks[to-1] == c.breaks[from]
}

// hashMessages returns a content hash of items [from, to), remembered
// across requests when c has the engine's memory.
func (c *conversation) hashMessages(from, to int) string {
	if c.hashes != nil {
		return c.hashes.of(c.req, from, to)
	}
	return hashItems(c.req, from, to)
}

// rangeHashes remembers hashItems of the ranges of items a conversation's
// requests name again and again (each request of a long session hashes
// every chunk it folds or cuts, and its cut: a pass over most of its
// bytes). Its key is the items' scan hashes and sizes (view.Item.Hash,
// which the count cache trusts already), read without touching their
// bytes; when full it starts over. It holds only content hashes of
// content the caller sent.
type rangeHashes struct {
	mu sync.Mutex
	m  map[[2]uint64]string
}

// maxRangeHashes bounds rangeHashes (about 100 bytes an entry).
const maxRangeHashes = 1 << 14

// of returns hashItems(r, from, to), remembered.
func (h *rangeHashes) of(r *view.Request, from, to int) string {
	d := xxhash.New()
	var b [16]byte
	size := 0
	for i := from; i < to; i++ {
		it := &r.Items[i]
		if it.Hash == 0 {
			return hashItems(r, from, to) // not scanned: no key
		}
		binary.LittleEndian.PutUint64(b[:8], it.Hash)
		binary.LittleEndian.PutUint64(b[8:], uint64(it.End-it.Start))
		d.Write(b[:])
		size += it.End - it.Start
	}
	k := [2]uint64{d.Sum64(), uint64(size)<<24 | uint64(to-from)&(1<<24-1)}
	h.mu.Lock()
	s, ok := h.m[k]
	h.mu.Unlock()
	if ok {
		return s
	}
	s = hashItems(r, from, to)
	h.mu.Lock()
	if h.m == nil || len(h.m) >= maxRangeHashes {
		h.m = make(map[[2]uint64]string)
	}
	h.m[k] = s
	h.mu.Unlock()
	return s
}

var zero [1]byte

func hashItems(r *view.Request, from, to int) string {
	h := sha256.New()
	// The items and their separators go to the hash a buffer at a time
	// (a write per item of a few bytes costs more than its hashing).
	var buf [8 << 10]byte
	b := buf[:0]
	for i := from; i < to; i++ {
		raw := r.Raw(i)
		if len(b)+len(raw)+1 > cap(b) {
			h.Write(b)
			b = b[:0]
			if len(raw)+1 > cap(b) {
				h.Write(r.Body[r.Items[i].Start:r.Items[i].End])
				h.Write(zero[:])
				continue
			}
		}
		b = append(append(b, raw...), 0)
	}
	h.Write(b)
	return hex.EncodeToString(h.Sum(nil)[:16])
}

// originals returns items [from, to) as a JSON array: their raw JSON, a
// comma before each but the first that is not empty, in brackets. A run
// of items the body holds joined by single commas, as agents send them,
// is copied in one piece.
func (c *conversation) originals(from, to int) []byte {
	items, body := c.req.Items[from:to], c.req.Body
	if from < to && items[0].Start < items[0].End && c.joined(from, to) {
		// One run: its bytes, in brackets.
		run := body[items[0].Start:items[len(items)-1].End]
		var out strings.Builder
		out.Grow(len(run) + 2)
		out.WriteByte('[')
		out.Write(run)
		out.WriteByte(']')
		str := out.String()
		return unsafe.Slice(unsafe.StringData(str), len(str))
	}
	n := 2 + max(len(items)-1, 0)
	for k := range items {
		if it := &items[k]; it.Start < it.End {
			n += it.End - it.Start
		}
	}
	// Written in a Builder: its memory is not cleared first (megabytes,
	// all overwritten).
	var out strings.Builder
	out.Grow(n)
	out.WriteByte('[')
	start, end := -1, -1 // the run being copied, in body
	for k := range items {
		s, e := items[k].Start, items[k].End
		if s < e && start >= 0 && s == end+1 && body[end] == ',' {
			end = e
			continue
		}
		if start >= 0 {
			out.Write(body[start:end])
			start = -1
		}
		if out.Len() > 1 {
			out.WriteByte(',')
		}
		if s < e {
			start, end = s, e
		}
	}
	if start >= 0 {
		out.Write(body[start:end])
	}
	out.WriteByte(']')
	// The bytes are the string's, never changed: the caches only read a
	// value (and the originals are handed over to them).
	str := out.String()
	return unsafe.Slice(unsafe.StringData(str), len(str))
}
