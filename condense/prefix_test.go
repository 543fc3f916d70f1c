package condense

import (
	"reflect"
	"testing"
	"time"
)

// TestPrefixRecordRoundTrip: a prefix record reads back as written, and
// any truncation or corruption of it reads as an error, never a panic or
// a record of other items.
func TestPrefixRecordRoundTrip(t *testing.T) {
	p := prefixEntry{outside: 0xfeedface, overhead: 1234, at: time.Unix(1_700_000_000, 42), received: 98765,
		billed: 1234.5, spent: 6.25, items: []itemSum{{1, 10}, {2 << 60, 2000}, {3, 0}}, condensed: true}
	got, err := decodePrefix(encodePrefix(p))
	if err != nil {
		t.Fatal(err)
	}
	if !got.at.Equal(p.at) {
		t.Fatalf("at %v, want %v", got.at, p.at)
	}
	got.at = p.at
	if !reflect.DeepEqual(got, p) {
		t.Fatalf("read back %+v, want %+v", got, p)
	}
	enc := encodePrefix(p)
	for n := 0; n < len(enc); n++ {
		if _, err := decodePrefix(enc[:n]); err == nil {
			t.Fatalf("a record cut at %d of %d bytes read without error", n, len(enc))
		}
	}
	if _, err := decodePrefix(append(enc, 0)); err == nil {
		t.Fatal("a record with a byte left over read without error")
	}
	bad := append([]byte(nil), enc...)
	bad[0] = prefixVersion + 1
	if _, err := decodePrefix(bad); err == nil {
		t.Fatal("a record of another version read without error")
	}
}

// TestPrefixRecordVersion1: a record the previous version wrote (version
// 1, no flags) still reads, as a conversation not condensed yet — during
// a rollout its next request gets the recall tool only once condensed.
func TestPrefixRecordVersion1(t *testing.T) {
	p := prefixEntry{outside: 7, overhead: 3, at: time.Unix(1_700_000_000, 0), received: 10, items: []itemSum{{1, 10}}, condensed: true}
	v2 := encodePrefix(p)
	v1 := append([]byte{1}, v2[1:len(v2)-1]...) // version 1; the flags dropped
	got, err := decodePrefix(v1)
	if err != nil {
		t.Fatal(err)
	}
	if got.condensed || got.received != 10 || len(got.items) != 1 {
		t.Fatalf("version 1 record read as %+v", got)
	}
	if _, err := decodePrefix(append(v1, 1)); err == nil {
		t.Fatal("a version 1 record with flags read without error")
	}
}

func FuzzPrefixRecord(f *testing.F) {
	f.Add(encodePrefix(prefixEntry{items: []itemSum{{1, 2}}}))
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := decodePrefix(b)
		if err == nil && len(p.items) > len(b) {
			t.Fatalf("%d items from %d bytes", len(p.items), len(b))
		}
	})
}
