package condense

import (
	"container/list"
	"sync"

	"github.com/cespare/xxhash/v2"

	"github.com/condense-proxy/condense-proxy/view"
)

// prefixLog remembers, per caller and conversation, the shape of the last
// request forwarded (a hash and a count per item, and a hash of every
// byte outside the items), so the next one can say how many of its
// leading tokens were identical: what a provider's prompt cache can serve.
// Bounded: the least recently seen conversations are forgotten. Safe for
// concurrent use.
type prefixLog struct {
	mu    sync.Mutex
	max   int
	ll    *list.List
	byKey map[string]*list.Element
}

type prefixEntry struct {
	key      string
	outside  uint64 // hash of the body outside the items array
	overhead int    // tokens outside the items
	items    []itemSum
}

type itemSum struct {
	hash   uint64
	tokens int
}

func newPrefixLog(max int) *prefixLog {
	return &prefixLog{max: max, ll: list.New(), byKey: map[string]*list.Element{}}
}

// summarize describes a forwarded request for the log.
func summarizeForPrefix(r *view.Request) prefixEntry {
	e := prefixEntry{items: make([]itemSum, len(r.Items)), overhead: r.Total}
	for i, it := range r.Items {
		e.items[i] = itemSum{xxhash.Sum64String(r.Raw(i)), it.Tokens}
		e.overhead -= it.Tokens
	}
	if r.Array[1] > 0 {
		h := xxhash.New()
		h.Write(r.Body[:r.Array[0]])
		h.Write([]byte{0})
		h.Write(r.Body[r.Array[1]:])
		e.outside = h.Sum64()
	}
	return e
}

// reused records cur as the latest request of key and returns how many of
// its leading tokens equal the previous one's (-1: none known). The
// parts outside the items (system, tools) count as leading when they are
// identical.
func (p *prefixLog) reused(key string, cur prefixEntry) int {
	cur.key = key
	p.mu.Lock()
	defer p.mu.Unlock()
	el, ok := p.byKey[key]
	if !ok {
		p.byKey[key] = p.ll.PushFront(&cur)
		if p.ll.Len() > p.max {
			old := p.ll.Back()
			p.ll.Remove(old)
			delete(p.byKey, old.Value.(*prefixEntry).key)
		}
		return -1
	}
	prev := el.Value.(*prefixEntry)
	n := 0
	if prev.outside == cur.outside {
		n = min(prev.overhead, cur.overhead)
		for i := 0; i < len(prev.items) && i < len(cur.items); i++ {
			if prev.items[i] != cur.items[i] {
				break
			}
			n += cur.items[i].tokens
		}
	}
	el.Value = &cur
	p.ll.MoveToFront(el)
	return n
}
