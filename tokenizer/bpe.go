package tokenizer

import (
	"hash/maphash"
	"math"
	"reflect"
	"sync/atomic"
	"unsafe"
)

// bpe counts the tokens of one piece as tiktoken-go's codec does: a piece
// that is a token is one; any other is merged pair by pair, the pair of
// lowest rank first (the leftmost of equal ranks), until no pair is a token.
type bpe struct {
	ranks map[string]uint
	// seen caches the counts of pieces: direct-mapped, lock-free, each
	// slot a piece's hash (its low countBits bits cleared) with its count
	// in them; 0 is empty. A hit costs a hash and a load, where the
	// vocabulary's map of 200,000 tokens misses the processor's caches
	// and a piece that is not a token costs a look-up per pair it merges.
	seed maphash.Seed
	seen *[seenSlots]atomic.Uint64
}

const (
	seenBits  = 13
	seenSlots = 1 << seenBits
	countBits = 12 // counts below 4096 are cached
)

func newBPE(ranks map[string]uint) bpe {
	return bpe{ranks: ranks, seed: maphash.MakeSeed(), seen: new([seenSlots]atomic.Uint64)}
}

// mergeHeapThreshold is the piece length from which count merges with a
// heap rather than by scanning (tiktoken-go switches at the same length;
// both give the same parts).
const mergeHeapThreshold = 96

const noRank = math.MaxUint32

func (b *bpe) count(piece string) int {
	if len(piece) <= 1 {
		return len(piece)
	}
	h := maphash.String(b.seed, piece)
	slot := &b.seen[h>>(64-seenBits)]
	tag := h &^ (1<<countBits - 1)
	if v := slot.Load(); v != 0 && v&^(1<<countBits-1) == tag {
		return int(v & (1<<countBits - 1))
	}
	n := b.merge(piece)
	if n < 1<<countBits {
		slot.Store(tag | uint64(n))
	}
	return n
}

// merge counts a piece's tokens.
func (b *bpe) merge(piece string) int {
	if _, ok := b.ranks[piece]; ok {
		return 1
	}
	if len(piece) < mergeHeapThreshold {
		return b.scan(piece)
	}
	return b.heap(piece)
}

func (b *bpe) rank(s string) uint32 {
	if r, ok := b.ranks[s]; ok && r < noRank {
		return uint32(r)
	}
	return noRank
}

type bpePart struct {
	offset int32
	rank   uint32
}

// scan merges by looking for the lowest rank at each step: O(n²), fast for
// short pieces, without allocating.
func (b *bpe) scan(piece string) int {
	var buf [mergeHeapThreshold + 1]bpePart
	parts := buf[:len(piece)+1]
	for i := range parts {
		parts[i] = bpePart{int32(i), noRank}
	}
	rankAt := func(i, skip int) uint32 {
		if i+skip+2 < len(parts) {
			return b.rank(piece[parts[i].offset:parts[i+skip+2].offset])
		}
		return noRank
	}
	for i := 0; i < len(parts)-2; i++ {
		parts[i].rank = rankAt(i, 0)
	}
	for len(parts) > 1 {
		minRank, minIndex := uint32(noRank), 0
		for i, p := range parts[:len(parts)-1] {
			if p.rank < minRank {
				minRank, minIndex = p.rank, i
			}
		}
		if minRank == noRank {
			break
		}
		parts[minIndex].rank = rankAt(minIndex, 1)
		if minIndex > 0 {
			parts[minIndex-1].rank = rankAt(minIndex-1, 1)
		}
		parts = append(parts[:minIndex+1], parts[minIndex+2:]...)
	}
	return len(parts) - 1
}

type mergeNode struct {
	prev, next int32
	rank       uint32
}

type mergeCandidate struct {
	rank   uint32
	offset int32
}

// heap merges with a linked list of boundaries and a heap of candidate
// pairs: O(n log n) for long pieces.
func (b *bpe) heap(piece string) int {
	n := int32(len(piece))
	nodes := make([]mergeNode, n+1)
	for i := range nodes {
		nodes[i] = mergeNode{prev: int32(i) - 1, next: int32(i) + 1, rank: noRank}
	}
	nodes[n].next = -1
	rankOf := func(i int32) uint32 {
		j := nodes[i].next
		if j < 0 {
			return noRank
		}
		k := nodes[j].next
		if k < 0 {
			return noRank
		}
		return b.rank(piece[i:k])
	}
	h := make(mergeHeap, 0, n)
	for i := int32(0); i+2 <= n; i++ {
		if r := rankOf(i); r != noRank {
			nodes[i].rank = r
			h = append(h, mergeCandidate{r, i})
		}
	}
	h.init()
	parts := int(n)
	for len(h) > 0 {
		top := h.pop()
		i := top.offset
		if nodes[i].rank != top.rank {
			continue
		}
		j := nodes[i].next
		k := nodes[j].next
		nodes[j].rank = noRank
		nodes[i].next = k
		if k >= 0 {
			nodes[k].prev = i
		}
		parts--
		for _, x := range [2]int32{i, nodes[i].prev} {
			if x < 0 {
				continue
			}
			nodes[x].rank = rankOf(x)
			if nodes[x].rank != noRank {
				h.push(mergeCandidate{nodes[x].rank, x})
			}
		}
	}
	return parts
}

// mergeHeap is a min-heap of candidates by rank, then offset.
type mergeHeap []mergeCandidate

func (h mergeHeap) less(a, b int) bool {
	if h[a].rank != h[b].rank {
		return h[a].rank < h[b].rank
	}
	return h[a].offset < h[b].offset
}

func (h mergeHeap) init() {
	for i := len(h)/2 - 1; i >= 0; i-- {
		h.down(i)
	}
}

func (h *mergeHeap) push(c mergeCandidate) {
	*h = append(*h, c)
	h.up(len(*h) - 1)
}

func (h *mergeHeap) pop() mergeCandidate {
	old := *h
	top := old[0]
	last := len(old) - 1
	old[0] = old[last]
	*h = old[:last]
	h.down(0)
	return top
}

func (h mergeHeap) up(i int) {
	for i > 0 {
		parent := (i - 1) / 2
		if !h.less(i, parent) {
			return
		}
		h[i], h[parent] = h[parent], h[i]
		i = parent
	}
}

func (h mergeHeap) down(i int) {
	for {
		child := 2*i + 1
		if child >= len(h) {
			return
		}
		if right := child + 1; right < len(h) && h.less(right, child) {
			child = right
		}
		if !h.less(child, i) {
			return
		}
		h[i], h[child] = h[child], h[i]
		i = child
	}
}

// libraryInternals returns the vocabulary (token → rank) and the split
// expression of a tiktoken-go codec, read from its unexported fields
// without copying them; ok is false when the codec is not the struct this
// was written against (another version of the library), and the caller then
// counts with the library alone.
func libraryInternals(c any) (ranks map[string]uint, pattern string, ok bool) {
	v := reflect.ValueOf(c)
	if v.Kind() != reflect.Pointer || v.IsNil() || v.Elem().Kind() != reflect.Struct {
		return nil, "", false
	}
	v = v.Elem()
	voc := v.FieldByName("vocabulary")
	if !voc.IsValid() || voc.Kind() != reflect.Map || voc.Type().Key().Kind() != reflect.String || voc.Type().Elem().Kind() != reflect.Uint {
		return nil, "", false
	}
	ranks = *(*map[string]uint)(unsafe.Pointer(voc.UnsafeAddr()))
	re := v.FieldByName("splitRegexp")
	if !re.IsValid() || re.Kind() != reflect.Pointer || re.IsNil() {
		return nil, "", false
	}
	s, isStringer := reflect.NewAt(re.Type(), unsafe.Pointer(re.UnsafeAddr())).Elem().Interface().(interface{ String() string })
	if !isStringer || len(ranks) == 0 {
		return nil, "", false
	}
	return ranks, s.String(), true
}
