package proxy

import (
	"bytes"
	"compress/flate"
	"compress/gzip"
	"compress/zlib"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/klauspost/compress/zstd"
)

var errTooLarge = errors.New("body too large")

// firstBodyBuffer is the buffer a body is first read into.
const firstBodyBuffer = 64 << 10

// readBody reads r's body, at most limit bytes, into a buffer whose bytes
// come from l. The buffer grows with what arrives, never past the
// Content-Length the client announced: an honest body ends in a buffer of
// exactly its size, and a client that announces a large body and sends
// little costs little (at most four times what it sent, past the first
// buffer). An announced body's buffer grows fourfold, straight to the
// announced size once that is less than twice the next step (a 1 MB body
// is read into 64 KiB, 256 KiB and 1 MB: 1.3 MB allocated and 320 KiB
// copied, where doubling took 3 MB and copied 2 MB); a body of unknown
// length doubles, so its buffer is never more than twice what arrived.
// Each growth takes the new buffer's bytes from l before it is made and
// gives the old one's back once copied.
//
// Errors: *http.MaxBytesError over limit; l's errors when the budget has
// no room; the body reader's otherwise (io.ErrUnexpectedEOF for a body
// shorter than announced, a timeout when the read deadline passed).
func readBody(w http.ResponseWriter, r *http.Request, limit int64, l *lease) ([]byte, error) {
	defer r.Body.Close()
	rd := http.MaxBytesReader(w, r.Body, limit)
	announced := r.ContentLength // -1: unknown
	if announced == 0 {
		return []byte{}, nil
	}
	ceiling := limit
	if announced > 0 && announced < limit {
		ceiling = announced
	}
	first := min(firstBodyBuffer, ceiling)
	if err := l.grow(first); err != nil {
		return nil, err
	}
	buf := make([]byte, 0, first)
	for {
		if int64(len(buf)) == announced {
			// net/http's body reader ends at the announced length.
			return buf, nil
		}
		if len(buf) == cap(buf) {
			next := min(growth(int64(cap(buf)), announced, ceiling), ceiling)
			if next <= int64(cap(buf)) {
				next = int64(cap(buf)) + 512 // over the limit: the reader says so
			}
			if err := l.grow(next); err != nil {
				return nil, err
			}
			grown := make([]byte, len(buf), next)
			copy(grown, buf)
			l.shrink(int64(cap(buf)))
			buf = grown
		}
		n, err := rd.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

// growth is the size of the buffer that follows one of size n full:
// fourfold for an announced body, straight to ceiling when that is less
// than twice the step; double for a body of unknown length.
func growth(n, announced, ceiling int64) int64 {
	if announced <= 0 {
		return 2 * n
	}
	if next := 4 * n; 2*next <= ceiling {
		return next
	}
	return ceiling
}

// decodeBody undoes a Content-Encoding of gzip, zstd or deflate into a
// buffer of at most limit bytes whose bytes come from l. decoded is false
// when there was nothing to undo. An unknown encoding or corrupt data is
// an *undecodableError (the caller forwards the body as received); more
// than limit decoded bytes is errTooLarge; l's errors when the budget has
// no room.
//
// The body is decoded twice: first streamed and counted, nothing kept,
// stopping at the first byte over limit — a bomb costs the decoder's
// window and some CPU, never its decoded size —, then into a buffer of
// exactly the counted size. A zstd frame that announces a size over limit
// is refused before any decoding; its decoding window is taken from l
// while it decodes.
func decodeBody(raw []byte, encoding string, limit int64, l *lease) (body []byte, decoded bool, err error) {
	enc := strings.ToLower(strings.TrimSpace(encoding))
	if enc == "" || enc == "identity" {
		return raw, false, nil
	}
	var window int64
	if enc == "zstd" {
		var h zstd.Header
		if h.Decode(raw) == nil {
			if h.HasFCS && h.FrameContentSize > uint64(limit) {
				return nil, false, errTooLarge
			}
			window = int64(min(h.WindowSize, uint64(limit)))
			if h.SingleSegment {
				window = int64(min(h.FrameContentSize, uint64(limit)))
			}
		}
	}
	if err := l.grow(window); err != nil {
		return nil, false, err
	}
	defer l.shrink(window)

	rd, err := decoder(raw, enc, limit)
	if err != nil {
		return nil, false, err
	}
	n, err := io.Copy(io.Discard, io.LimitReader(rd, limit+1))
	rd.Close()
	if err != nil {
		return nil, false, decodeError(enc, err)
	}
	if n > limit {
		return nil, false, errTooLarge
	}

	if err := l.grow(n); err != nil {
		return nil, false, err
	}
	out := make([]byte, n)
	rd, err = decoder(raw, enc, limit)
	if err != nil {
		l.shrink(n)
		return nil, false, err
	}
	defer rd.Close()
	if _, err := io.ReadFull(rd, out); err != nil {
		l.shrink(n)
		return nil, false, decodeError(enc, err)
	}
	return out, true, nil
}

// decoder returns a reader of raw decoded per enc.
func decoder(raw []byte, enc string, limit int64) (io.ReadCloser, error) {
	switch enc {
	case "gzip", "x-gzip":
		zr, err := gzip.NewReader(bytes.NewReader(raw))
		if err != nil {
			return nil, &undecodableError{enc, err}
		}
		return zr, nil
	case "zstd":
		max := uint64(max(limit, zstd.MinWindowSize))
		zr, err := zstd.NewReader(bytes.NewReader(raw), zstd.WithDecoderConcurrency(1), zstd.WithDecoderLowmem(true),
			zstd.WithDecoderMaxMemory(max), zstd.WithDecoderMaxWindow(max))
		if err != nil {
			return nil, &undecodableError{enc, err}
		}
		return zr.IOReadCloser(), nil
	case "deflate":
		// HTTP's deflate is zlib-wrapped; some clients send raw deflate.
		if zr, err := zlib.NewReader(bytes.NewReader(raw)); err == nil {
			return zr, nil
		}
		return flate.NewReader(bytes.NewReader(raw)), nil
	}
	return nil, &undecodableError{enc, errors.New("unsupported content-encoding")}
}

// undecodableError: a body whose Content-Encoding could not be undone
// (unknown, or corrupt data); it is forwarded as received.
type undecodableError struct {
	enc string
	err error
}

func (e *undecodableError) Error() string { return fmt.Sprintf("decoding %q: %v", e.enc, e.err) }
func (e *undecodableError) Unwrap() error { return e.err }

// decodeError maps a decoder's error: a zstd frame whose window is over
// the limit is too large; anything else is corrupt data.
func decodeError(enc string, err error) error {
	if errors.Is(err, zstd.ErrWindowSizeExceeded) || errors.Is(err, zstd.ErrDecoderSizeExceeded) {
		return errTooLarge
	}
	return &undecodableError{enc, err}
}
