package proxy

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/condense-proxy/condense-proxy/condense"
	"github.com/condense-proxy/condense-proxy/view"
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

// condensing returns the handler of a condensing route: the body is read,
// decoded and handed to the Condenser with the route's codec; what comes
// back is forwarded.
func (p *Proxy) condensing(route string, codec view.Codec) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) { p.condense(w, r, route, codec, false) }
}

// counting returns the handler of a token-counting route (Messages'
// count_tokens): the body goes through the same pipeline as on the
// condensing route, without side effects (no summarizer call: summaries
// come from the cache or are extractive; nothing written), and what would
// be forwarded is sent to the upstream's count_tokens, so the count the
// agent gets is the provider's count of what its next request will really
// carry.
func (p *Proxy) counting(route string, codec view.Codec) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) { p.condense(w, r, route, codec, true) }
}

func (p *Proxy) condense(w http.ResponseWriter, r *http.Request, route string, codec view.Codec, countOnly bool) {
	start := time.Now()
	ri := info(r.Context())
	ri.route = route
	if !p.inflight.acquire(r.Context(), p.opts.InflightWait) {
		if r.Context().Err() != nil {
			ri.status = StatusClientClosed
			ri.note = "client left while waiting to be condensed"
			return
		}
		// Busy: the request goes on as received, body streamed, nothing
		// read or counted here.
		why := fmt.Sprintf("busy: %d requests being condensed (max_inflight_condense); forwarded unchanged", p.inflight.size())
		ri.note = why
		w.Header().Set(HeaderApplied, condense.AppliedNone)
		w.Header().Set(HeaderDegraded, why)
		p.metrics.Condensed(condense.AppliedNone, "busy", 0)
		p.rp.ServeHTTP(w, r)
		return
	}
	body, ok := p.prepare(w, r, codec, countOnly)
	p.inflight.release()
	if ok {
		p.forward(w, r, body, start)
	}
}

// prepare reads, decodes and condenses r's body, holding one of the
// in-flight places. It returns the body to forward, or false when it
// answered the request itself (413) or the client left.
func (p *Proxy) prepare(w http.ResponseWriter, r *http.Request, codec view.Codec, countOnly bool) ([]byte, bool) {
	ri := info(r.Context())
	raw, err := readBody(w, r, p.opts.MaxBodyBytes)
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			ri.note = fmt.Sprintf("body over max_body_bytes (%d)", p.opts.MaxBodyBytes)
			writeError(w, r, http.StatusRequestEntityTooLarge, "invalid_request_error",
				fmt.Sprintf("condense-proxy: request body larger than %d bytes", p.opts.MaxBodyBytes))
			return nil, false
		}
		ri.status = StatusClientClosed
		ri.note = "reading request body: " + err.Error()
		return nil, false
	}

	body, decoded, err := decodeBody(raw, r.Header.Get("Content-Encoding"), p.opts.MaxDecompressedBytes)
	switch {
	case errors.Is(err, errTooLarge):
		ri.note = fmt.Sprintf("decoded body over max_decompressed_bytes (%d)", p.opts.MaxDecompressedBytes)
		writeError(w, r, http.StatusRequestEntityTooLarge, "invalid_request_error",
			fmt.Sprintf("condense-proxy: decoded request body larger than %d bytes", p.opts.MaxDecompressedBytes))
		return nil, false
	case err != nil:
		// Not ours to judge: the upstream sees exactly what was sent.
		ri.note = "body not decodable (" + err.Error() + "); forwarded unchanged"
		return raw, true
	}
	if decoded {
		r.Header.Del("Content-Encoding")
	}

	mode := p.opts.DefaultMode
	if h := strings.ToLower(strings.TrimSpace(r.Header.Get(HeaderMode))); h != "" {
		if condense.ValidMode(h) {
			mode = h
		} else {
			ri.note = fmt.Sprintf("unknown %s %q; using %s", HeaderMode, h, mode)
		}
	}
	ri.mode = mode
	force, _ := strconv.ParseBool(r.Header.Get(HeaderForce))
	ri.scope = p.opts.Scoper.Scope(r.Header)

	res, err := p.opts.Condenser.Condense(r.Context(), condense.Request{
		Body:        body,
		Codec:       codec,
		Mode:        mode,
		Force:       force,
		Scope:       ri.scope,
		Credentials: p.opts.Scoper.Credentials(r.Header),
		CountOnly:   countOnly,
	})
	if err != nil {
		if r.Context().Err() != nil {
			ri.status = StatusClientClosed
			ri.note = "client left while condensing"
			return nil, false
		}
		if errors.Is(err, view.ErrTooManyItems) {
			ri.note = err.Error()
			writeError(w, r, http.StatusRequestEntityTooLarge, "invalid_request_error", "condense-proxy: "+err.Error())
			return nil, false
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
		if !countOnly {
			p.metrics.observeReport(rep.Applied, rep.TokensBefore, rep.TokensAfter, rep.PrefixReused)
		}
	}
	for _, hd := range res.Headers {
		addListHeader(r.Header, hd.Name, hd.Value)
	}
	return res.Body, true
}

// addListHeader adds value to a comma-separated list header (anthropic-beta)
// unless it is there already.
func addListHeader(h http.Header, name, value string) {
	for _, v := range h.Values(name) {
		for _, e := range strings.Split(v, ",") {
			if strings.TrimSpace(e) == value {
				return
			}
		}
	}
	if cur := h.Get(name); cur != "" && len(h.Values(name)) == 1 {
		h.Set(name, cur+","+value)
		return
	}
	h.Add(name, value)
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
