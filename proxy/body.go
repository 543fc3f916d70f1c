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

// readBody reads r's body, at most limit bytes. The buffer grows with what
// arrives, doubling, never past the Content-Length the client announced:
// an honest body ends in a buffer of exactly its size, and a client that
// announces a large body and sends little costs little.
func readBody(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, error) {
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
	buf := make([]byte, 0, min(firstBodyBuffer, ceiling))
	for {
		if int64(len(buf)) == announced {
			// net/http's body reader ends at the announced length.
			return buf, nil
		}
		if len(buf) == cap(buf) {
			next := min(2*int64(cap(buf)), ceiling)
			if next <= int64(cap(buf)) {
				next = int64(cap(buf)) + 512 // over the limit: the reader says so
			}
			grown := make([]byte, len(buf), next)
			copy(grown, buf)
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

// decodeBody undoes a Content-Encoding of gzip, zstd or deflate, reading
// at most limit decoded bytes. decoded is false when there was nothing to
// undo. An unknown encoding or corrupt data is an error (the caller
// forwards the body as received); more than limit bytes is errTooLarge.
func decodeBody(raw []byte, encoding string, limit int64) (body []byte, decoded bool, err error) {
	enc := strings.ToLower(strings.TrimSpace(encoding))
	var rd io.Reader
	switch enc {
	case "", "identity":
		return raw, false, nil
	case "gzip", "x-gzip":
		zr, err := gzip.NewReader(bytes.NewReader(raw))
		if err != nil {
			return nil, false, fmt.Errorf("gzip: %w", err)
		}
		rd = zr
	case "zstd":
		zr, err := zstd.NewReader(bytes.NewReader(raw), zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxMemory(uint64(limit)+1))
		if err != nil {
			return nil, false, fmt.Errorf("zstd: %w", err)
		}
		defer zr.Close()
		rd = zr
	case "deflate":
		// HTTP's deflate is zlib-wrapped; some clients send raw deflate.
		if zr, err := zlib.NewReader(bytes.NewReader(raw)); err == nil {
			rd = zr
		} else {
			rd = flate.NewReader(bytes.NewReader(raw))
		}
	default:
		return nil, false, fmt.Errorf("unsupported content-encoding %q", encoding)
	}
	out, err := io.ReadAll(io.LimitReader(rd, limit+1))
	if err != nil {
		if strings.Contains(err.Error(), "exceeds") || strings.Contains(err.Error(), "memory") {
			return nil, false, errTooLarge
		}
		return nil, false, fmt.Errorf("decoding %s: %w", enc, err)
	}
	if int64(len(out)) > limit {
		return nil, false, errTooLarge
	}
	return out, true, nil
}
