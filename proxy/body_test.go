package proxy

import (
	"bytes"
	"compress/gzip"
	"compress/zlib"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/klauspost/compress/zstd"
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
			got, err := readBody(httptest.NewRecorder(), r, limit, unlimited())
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
		if _, err := readBody(httptest.NewRecorder(), r, 64<<20, unlimited()); err == nil {
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
	got, err := readBody(httptest.NewRecorder(), r, 64<<20, unlimited())
	if err != nil || !bytes.Equal(got, body) {
		t.Fatalf("err %v, %d bytes", err, len(got))
	}
	if cap(got) != len(body) {
		t.Errorf("buffer capacity %d for a body of %d", cap(got), len(body))
	}
}

// unlimited is a lease on a budget nothing else uses.
func unlimited() *lease { return newBudget(1<<62).lease(context.Background(), 0) }

// bomb returns n bytes of JSON-looking text compressed by enc; small
// windows for zstd unless fcs asks for a frame that announces its size.
func bomb(t testing.TB, enc string, n int, fcs bool) []byte {
	t.Helper()
	data := bytes.Repeat([]byte(`{"role":"user","content":"aaaaaaaaaaaaaaaa"},`), n/44+1)[:n]
	var b bytes.Buffer
	switch enc {
	case "gzip":
		w := gzip.NewWriter(&b)
		w.Write(data)
		w.Close()
	case "deflate":
		w := zlib.NewWriter(&b)
		w.Write(data)
		w.Close()
	case "zstd":
		w, err := zstd.NewWriter(&b, zstd.WithWindowSize(1<<17), zstd.WithEncoderLevel(zstd.SpeedFastest))
		if err != nil {
			t.Fatal(err)
		}
		if fcs {
			return w.EncodeAll(data, nil)
		}
		w.Write(data)
		w.Close()
	}
	return b.Bytes()
}

// TestDecodeBodyStopsAtTheLimit: a body decoding past the limit is
// refused while decoding — its decoded size is never held — and leaves
// nothing taken from the budget; one under the limit ends in a buffer of
// exactly its size, counted in the budget.
func TestDecodeBodyStopsAtTheLimit(t *testing.T) {
	const limit = 1 << 20
	tests := []struct {
		name string
		enc  string
		fcs  bool
	}{
		{"gzip", "gzip", false},
		{"deflate", "deflate", false},
		{"zstd streamed", "zstd", false},
		{"zstd announcing its size", "zstd", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := newBudget(8 * limit)
			raw := bomb(t, tc.enc, 32<<20, tc.fcs)
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			l := b.lease(context.Background(), 0)
			_, _, err := decodeBody(raw, tc.enc, limit, l)
			runtime.ReadMemStats(&after)
			if !errors.Is(err, errTooLarge) {
				t.Fatalf("32 MiB decoded past a limit of 1 MiB: err %v", err)
			}
			if n := after.TotalAlloc - before.TotalAlloc; n > 4*limit {
				t.Errorf("refusing the bomb allocated %d MiB", n>>20)
			}
			if l.held != 0 || b.inUse() != 0 {
				t.Errorf("refused body still holds %d bytes (budget %d)", l.held, b.inUse())
			}

			small := bomb(t, tc.enc, limit-100, tc.fcs)
			l = b.lease(context.Background(), 0)
			out, decoded, err := decodeBody(small, tc.enc, limit, l)
			if err != nil || !decoded || len(out) != limit-100 || cap(out) != len(out) {
				t.Fatalf("under the limit: err %v, decoded %v, %d bytes (cap %d)", err, decoded, len(out), cap(out))
			}
			if l.held != int64(len(out)) || b.inUse() != int64(len(out)) {
				t.Errorf("decoded body holds %d bytes of the budget (%d in use), want %d", l.held, b.inUse(), len(out))
			}
			l.release()
			l.release()
			if b.inUse() != 0 {
				t.Errorf("released lease leaves %d bytes in use", b.inUse())
			}
		})
	}
}

// TestReadBodyTakesFromTheBudget: reading takes the buffer's bytes from
// the budget, and fails rather than go past it.
func TestReadBodyTakesFromTheBudget(t *testing.T) {
	body := strings.Repeat("x", 300<<10)
	tests := []struct {
		name      string
		budget    int64
		announced int64
		fits      bool
	}{
		{"announced, fits", 1 << 20, int64(len(body)), true},
		{"chunked, fits", 1 << 20, -1, true},
		{"announced, over the budget", 200 << 10, int64(len(body)), false},
		{"chunked, over the budget", 200 << 10, -1, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := newBudget(tc.budget)
			l := b.lease(context.Background(), time.Millisecond)
			r := httptest.NewRequest(http.MethodPost, "/v1/chat/completions", strings.NewReader(body))
			r.ContentLength = tc.announced
			got, err := readBody(httptest.NewRecorder(), r, 1<<20, l)
			if !tc.fits {
				var obe *overBudgetError
				if !errors.Is(err, errBudgetBusy) && !errors.As(err, &obe) {
					t.Fatalf("err %v, want the budget's", err)
				}
			} else if err != nil || string(got) != body {
				t.Fatalf("err %v, %d bytes", err, len(got))
			} else if l.held != int64(cap(got)) || b.inUse() != l.held {
				t.Errorf("buffer of %d bytes holds %d of the budget (%d in use)", cap(got), l.held, b.inUse())
			}
			l.release()
			if b.inUse() != 0 {
				t.Errorf("%d bytes in use after release", b.inUse())
			}
		})
	}
}

// TestBudgetWaitsForBytes: a take waits for bytes given back, fails after
// its wait, and fails at once when more than the whole budget is asked.
func TestBudgetWaitsForBytes(t *testing.T) {
	b := newBudget(100)
	ctx := context.Background()
	if err := b.take(ctx, 80, 0); err != nil {
		t.Fatal(err)
	}
	var obe *overBudgetError
	if err := b.take(ctx, 101, time.Hour); !errors.As(err, &obe) {
		t.Fatalf("over the whole budget: %v", err)
	}
	if err := b.take(ctx, 30, time.Millisecond); !errors.Is(err, errBudgetBusy) {
		t.Fatalf("no room: %v", err)
	}
	got := make(chan error, 1)
	go func() { got <- b.take(ctx, 30, time.Hour) }()
	b.give(80)
	if err := <-got; err != nil {
		t.Fatalf("bytes given back: %v", err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if err := b.take(cctx, 90, time.Hour); !errors.Is(err, context.Canceled) {
		t.Fatalf("ctx ended: %v", err)
	}
	if b.inUse() != 30 {
		t.Fatalf("%d in use, want 30", b.inUse())
	}
}
