package proxy

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"testing/iotest"
)

// TestReadBody: what readBody returns, for honest and dishonest lengths.
func TestReadBody(t *testing.T) {
	const limit = 1 << 20
	big := strings.Repeat("x", 300<<10) // several doublings of the first buffer
	tests := []struct {
		name      string
		body      io.Reader
		announced int64 // -1: chunked
		want      string
		tooLarge  bool
	}{
		{"empty", strings.NewReader(""), 0, "", false},
		{"announced", strings.NewReader(`{"a":1}`), 7, `{"a":1}`, false},
		{"chunked", strings.NewReader(`{"a":1}`), -1, `{"a":1}`, false},
		{"large announced", strings.NewReader(big), int64(len(big)), big, false},
		{"large chunked", strings.NewReader(big), -1, big, false},
		{"a byte at a time", iotest.OneByteReader(strings.NewReader(big[:5000])), -1, big[:5000], false},
		{"exactly the limit", strings.NewReader(strings.Repeat("y", limit)), -1, strings.Repeat("y", limit), false},
		{"over the limit, chunked", strings.NewReader(strings.Repeat("y", limit+1)), -1, "", true},
		{"over the limit, announced", strings.NewReader(strings.Repeat("y", limit+1)), limit + 1, "", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodPost, "/v1/chat/completions", tc.body)
			r.ContentLength = tc.announced
			got, err := readBody(httptest.NewRecorder(), r, limit)
			var mbe *http.MaxBytesError
			if tc.tooLarge != errors.As(err, &mbe) {
				t.Fatalf("err %v, want too large %v", err, tc.tooLarge)
			}
			if !tc.tooLarge && (err != nil || string(got) != tc.want) {
				t.Fatalf("got %d bytes, err %v; want %d bytes", len(got), err, len(tc.want))
			}
		})
	}
}

// TestReadBodyDoesNotTrustContentLength: a client announcing a body of
// 48 MiB and sending a few bytes does not make the proxy allocate 48 MiB.
func TestReadBodyDoesNotTrustContentLength(t *testing.T) {
	const announced = 48 << 20
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for range 4 {
		r := httptest.NewRequest(http.MethodPost, "/v1/chat/completions", io.MultiReader(strings.NewReader(`{"model":`), iotest.ErrReader(io.ErrUnexpectedEOF)))
		r.ContentLength = announced
		if _, err := readBody(httptest.NewRecorder(), r, 64<<20); err == nil {
			t.Fatal("a body shorter than announced was accepted")
		}
	}
	runtime.ReadMemStats(&after)
	if n := after.TotalAlloc - before.TotalAlloc; n > 4<<20 {
		t.Fatalf("4 reads of a body announced at %d MiB allocated %d MiB", announced>>20, n>>20)
	}
}

// TestReadBodyHonestLengthOneBuffer: an announced body ends in a buffer of
// exactly its size (nothing copied into a larger one at the end).
func TestReadBodyHonestLengthOneBuffer(t *testing.T) {
	body := bytes.Repeat([]byte("z"), 3<<20+17)
	r := httptest.NewRequest(http.MethodPost, "/v1/chat/completions", bytes.NewReader(body))
	got, err := readBody(httptest.NewRecorder(), r, 64<<20)
	if err != nil || !bytes.Equal(got, body) {
		t.Fatalf("err %v, %d bytes", err, len(got))
	}
	if cap(got) != len(body) {
		t.Errorf("buffer capacity %d for a body of %d", cap(got), len(body))
	}
}
