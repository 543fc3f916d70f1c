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
		billed: 1234.5, spent: 6.25, items: []itemSum{{1, 10}, {2 << 60, 2000}, {3, 0}}}
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

func FuzzPrefixRecord(f *testing.F) {
	f.Add(encodePrefix(prefixEntry{items: []itemSum{{1, 2}}}))
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := decodePrefix(b)
		if err == nil && len(p.items) > len(b) {
			t.Fatalf("%d items from %d bytes", len(p.items), len(b))
		}
	})
}
