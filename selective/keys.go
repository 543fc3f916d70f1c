package selective

import (
	"encoding/binary"
	"hash/maphash"
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
	mu   sync.Mutex
	sums map[uint64]uint64
}

// maxDigestKeys bounds the memo (16 bytes an entry): it starts over when
// full.
const maxDigestKeys = 1 << 16

func newDigestKeys() *digestKeys {
	return &digestKeys{seed: maphash.MakeSeed(), sums: map[uint64]uint64{}}
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

func (k *digestKeys) get(fp uint64) (uint64, bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	sum, ok := k.sums[fp]
	return sum, ok
}

func (k *digestKeys) put(fp, sum uint64) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if len(k.sums) >= maxDigestKeys {
		clear(k.sums)
	}
	k.sums[fp] = sum
}
