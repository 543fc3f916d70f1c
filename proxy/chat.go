package proxy

import (
	"bytes"
	"compress/flate"
	"compress/gzip"
	"compress/zlib"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/klauspost/compress/zstd"

	"github.com/condense-proxy/condense-proxy/condense"
	"github.com/condense-proxy/condense-proxy/tokenizer"
)

// Request and response headers of the external interface.
const (
	HeaderMode         = "X-Condense-Mode"
	HeaderForce        = "X-Condense-Force"
	HeaderApplied      = "X-Condense-Applied"
	HeaderTokensBefore = "X-Condense-Tokens-Before"
	HeaderTokensAfter  = "X-Condense-Tokens-After"
	HeaderDegraded     = "X-Condense-Degraded"
	HeaderSummaries    = "X-Condense-Summaries"
	HeaderCache        = "X-Condense-Cache"
)

var errTooLarge = errors.New("body too large")

// chat handles POST /v1/chat/completions and /chat/completions.
func (p *Proxy) chat(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	ri := info(r.Context())
	ri.route = "chat"

	raw, err := readBody(w, r, p.opts.MaxBodyBytes)
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			ri.note = fmt.Sprintf("body over max_body_bytes (%d)", p.opts.MaxBodyBytes)
			writeError(w, http.StatusRequestEntityTooLarge, "invalid_request_error",
				fmt.Sprintf("condense-proxy: request body larger than %d bytes", p.opts.MaxBodyBytes))
			return
		}
		ri.status = StatusClientClosed
		ri.note = "reading request body: " + err.Error()
		return
	}

	body, decoded, err := decodeBody(raw, r.Header.Get("Content-Encoding"), p.opts.MaxDecompressedBytes)
	switch {
	case errors.Is(err, errTooLarge):
		ri.note = fmt.Sprintf("decoded body over max_decompressed_bytes (%d)", p.opts.MaxDecompressedBytes)
		writeError(w, http.StatusRequestEntityTooLarge, "invalid_request_error",
			fmt.Sprintf("condense-proxy: decoded request body larger than %d bytes", p.opts.MaxDecompressedBytes))
		return
	case err != nil:
		// Not ours to judge: the upstream sees exactly what was sent.
		ri.note = "body not decodable (" + err.Error() + "); forwarded unchanged"
		p.forward(w, r, raw, start)
		return
	}
	if decoded {
		r.Header.Del("Content-Encoding")
	}

	mode := p.opts.DefaultMode
	if h := strings.ToLower(strings.TrimSpace(r.Header.Get(HeaderMode))); h != "" {
		if validMode(h) {
			mode = h
		} else {
			ri.note = fmt.Sprintf("unknown %s %q; using %s", HeaderMode, h, mode)
		}
	}
	ri.mode = mode
	force, _ := strconv.ParseBool(r.Header.Get(HeaderForce))

	res, err := p.opts.Condenser.Condense(r.Context(), condense.Request{
		Body:        body,
		Mode:        mode,
		Force:       force,
		Scope:       Scope(r.Header),
		Credentials: credentials(r.Header),
	})
	if err != nil {
		if r.Context().Err() != nil {
			ri.status = StatusClientClosed
			ri.note = "client left while condensing"
			return
		}
		if errors.Is(err, tokenizer.ErrTooManyMessages) {
			ri.note = err.Error()
			writeError(w, http.StatusRequestEntityTooLarge, "invalid_request_error", "condense-proxy: "+err.Error())
			return
		}
		ri.note = "condensing failed (" + err.Error() + "); forwarded unchanged"
		res = condense.Result{Body: body, Report: condense.Report{Applied: condense.AppliedNone}}
	}
	rep := res.Report
	ri.report = &rep
	if rep.Counted {
		h := w.Header()
		h.Set(HeaderApplied, rep.Applied)
		h.Set(HeaderTokensBefore, strconv.Itoa(rep.TokensBefore))
		h.Set(HeaderTokensAfter, strconv.Itoa(rep.TokensAfter))
		if rep.Degraded != "" {
			h.Set(HeaderDegraded, rep.Degraded)
		}
		if rep.Summaries != "" {
			h.Set(HeaderSummaries, rep.Summaries)
		}
		if rep.Cache != "" {
			h.Set(HeaderCache, rep.Cache)
		}
		p.metrics.tokens.WithLabelValues("received").Add(float64(rep.TokensBefore))
		p.metrics.tokens.WithLabelValues("forwarded").Add(float64(rep.TokensAfter))
	}
	p.forward(w, r, res.Body, start)
}

// readBody reads r's body, at most limit bytes, into one buffer sized from
// Content-Length when the client sent one.
func readBody(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, error) {
	defer r.Body.Close()
	rd := http.MaxBytesReader(w, r.Body, limit)
	if n := r.ContentLength; n > 0 && n <= limit {
		buf := make([]byte, n)
		if _, err := io.ReadFull(rd, buf); err != nil {
			return nil, err
		}
		// A body longer than it announced is a protocol error net/http
		// reports; anything left is not read.
		return buf, nil
	}
	return io.ReadAll(rd)
}

// forward sends body upstream in place of r's.
func (p *Proxy) forward(w http.ResponseWriter, r *http.Request, body []byte, start time.Time) {
	r.Body = io.NopCloser(bytes.NewReader(body))
	r.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	r.ContentLength = int64(len(body))
	r.Header.Set("Content-Length", strconv.Itoa(len(body)))
	ri := info(r.Context())
	ri.overhead = time.Since(start)
	p.metrics.overhead.Observe(ri.overhead.Seconds())
	p.rp.ServeHTTP(w, r)
}

func validMode(m string) bool {
	switch m {
	case condense.ModeAuto, condense.ModeFull, condense.ModeSelective, condense.ModeTruncate, condense.ModeOff:
		return true
	}
	return false
}

// Scope identifies the caller by a hash of its credentials (Authorization,
// x-api-key, api-key). The credentials themselves are never kept.
func Scope(h http.Header) string {
	sum := sha256.New()
	for _, k := range []string{"Authorization", "X-Api-Key", "Api-Key"} {
		sum.Write([]byte(k))
		sum.Write([]byte{0})
		sum.Write([]byte(h.Get(k)))
		sum.Write([]byte{0})
	}
	return hex.EncodeToString(sum.Sum(nil)[:16])
}

// credentialHeaders are copied onto the summarizer's upstream calls, so a
// summary is paid for by the caller whose conversation it is.
var credentialHeaders = []string{"Authorization", "X-Api-Key", "Api-Key", "OpenAI-Organization", "OpenAI-Project"}

func credentials(h http.Header) http.Header {
	out := http.Header{}
	for _, k := range credentialHeaders {
		if v := h.Values(k); len(v) > 0 {
			out[k] = append([]string(nil), v...)
		}
	}
	return out
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
