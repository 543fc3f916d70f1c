package selective

import (
	"encoding/binary"
	"hash/maphash"
	"reflect"
	"sync"
)

// digestKeys remembers, in this process, the hash each digest's key is
// made of (digest: the output's tool, arguments and value, and the raw
// messages after it), under a fingerprint of the items those bytes are
// in (the scan's hash of each item, Message.ItemHash, and the message's
// place in its item). An old output's key is then found without hashing
// its bytes and its later window's again on every request: each byte is
// hashed once per request, by the scan, instead of up to six times. The
// keys are the same with or without it; a fingerprint is never stored
// or sent (its seed is this process's).
type digestKeys struct {
	seed maphash.Seed
	sums memo[uint64, uint64] // fingerprint → the key's hash
}

// maxDigestKeys bounds the memo (16 bytes an entry).
const maxDigestKeys = 1 << 16

func newDigestKeys() *digestKeys {
	return &digestKeys{seed: maphash.MakeSeed(), sums: memo[uint64, uint64]{max: maxDigestKeys * 16,
		sizeOf: func(uint64, uint64) int { return 16 }}}
}

// fingerprint returns the fingerprint of a digest's inputs — the
// candidate m (its call's tool and arguments) and the later messages —
// false when an item's hash is unknown.
func (k *digestKeys) fingerprint(tool, args string, m Message, later []Message) (uint64, bool) {
	var h maphash.Hash
	h.SetSeed(k.seed)
	h.WriteString(tool)
	h.WriteByte(0)
	h.WriteString(args)
	h.WriteByte(0)
	if !writeMessage(&h, m) {
		return 0, false
	}
	for _, x := range later {
		if !writeMessage(&h, x) {
			return 0, false
		}
	}
	return h.Sum64(), true
}

// writeMessage writes what fingerprints m to h, false when its item's
// hash is unknown.
func writeMessage(h *maphash.Hash, m Message) bool {
	if m.ItemHash == 0 {
		return false
	}
	var b [24]byte
	binary.LittleEndian.PutUint64(b[:], m.ItemHash)
	binary.LittleEndian.PutUint64(b[8:], uint64(m.Part))
	binary.LittleEndian.PutUint64(b[16:], uint64(len(m.Raw)))
	h.Write(b[:])
	return true
}

// madeDigests remembers, in this process, the extractive digests it read
// from the cache (or made, without one), with their value as the codec
// writes it, by caller scope, codec and key (the hash digestSum makes):
// an old output's digest is the same on every request, and it is then
// neither read from the cache, copied, nor encoded again on each of them.
// An extractive digest is a function of the bytes its key hashes (and of
// the token count of the request's model) and is only remembered as the
// shared cache holds it, so what a process remembers is what every
// replica reads; LLM digests, which are not such a function, always come
// from the cache. Bounded by bytes (madeSize).
type madeDigests = memo[madeKey, madeDigest]

type madeKey struct {
	scope string
	codec reflect.Type // the codec's: its TextValue
	sum   uint64
}

type madeDigest struct {
	text  string
	value []byte // the codec's TextValue of text
}

// maxMadeBytes bounds what madeDigests holds.
const maxMadeBytes = 32 << 20

// madeSize is about what a digest remembered takes.
func madeSize(k madeKey, d madeDigest) int { return len(k.scope) + len(d.text) + len(d.value) + 64 }

// memo is a map of a process's own, bounded by the size of what it holds
// (sizeOf each entry, max in all): it starts over when full. The first
// value put for a key stays (what either memo remembers for a key does
// not change). Safe for concurrent use.
type memo[K comparable, V any] struct {
	max    int
	sizeOf func(K, V) int
	mu     sync.Mutex
	size   int
	m      map[K]V
}

func (m *memo[K, V]) get(k K) (V, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	v, ok := m.m[k]
	return v, ok
}

func (m *memo[K, V]) put(k K, v V) {
	size := m.sizeOf(k, v)
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.m == nil || m.size+size > m.max {
		m.m, m.size = map[K]V{}, 0
	}
	if _, ok := m.m[k]; !ok {
		m.m[k] = v
		m.size += size
	}
}
