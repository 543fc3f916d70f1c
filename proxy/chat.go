package proxy

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
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
	// HeaderCold is set ("true") on a cold turn: a request over the
	// threshold after an idle gap past the model's cache_ttl, its edits
	// moved at least to the target (condense/cold.go).
	HeaderCold = "X-Condense-Cold"
	// Observe mode: what auto would have applied and forwarded.
	HeaderWouldApply       = "X-Condense-Would-Apply"
	HeaderWouldTokensAfter = "X-Condense-Would-Tokens-After"
	// HeaderArm names the request's arm when condense.holdout_share is
	// set: holdout (forwarded as received) or condensed.
	HeaderArm = "X-Condense-Arm"
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
	if r.ContentLength > p.opts.MaxBodyBytes {
		// Refused before a byte is read (or a place taken).
		ri.note = fmt.Sprintf("Content-Length %d over max_body_bytes (%d); refused before reading", r.ContentLength, p.opts.MaxBodyBytes)
		w.Header().Set("Connection", "close")
		writeError(w, r, http.StatusRequestEntityTooLarge, "invalid_request_error",
			fmt.Sprintf("condense-proxy: request body larger than %d bytes", p.opts.MaxBodyBytes))
		return
	}
	l := p.bodies.lease(r.Context(), p.opts.InflightWait)
	defer l.release()
	// The body is read before a condensing place is taken: a slow upload
	// holds its memory lease, never a place others need.
	raw, err := p.readBody(w, r, l)
	if err != nil {
		p.refuseBody(w, r, err)
		return
	}
	ri.scope = p.opts.Scoper.Scope(callerHeader(r))
	place, got := p.inflight.acquire(r.Context(), ri.scope, p.opts.InflightWait)
	if !got {
		if r.Context().Err() != nil {
			ri.status = StatusClientClosed
			ri.note = "client left while waiting to be condensed"
			return
		}
		// Busy: the request goes on as received, nothing counted.
		why := fmt.Sprintf("busy: %d requests being condensed (max_inflight_condense, at most %d a caller); forwarded unchanged", p.inflight.size(), p.inflight.share())
		ri.note = why
		w.Header().Set(HeaderApplied, condense.AppliedNone)
		w.Header().Set(HeaderDegraded, why)
		p.metrics.Condensed(condense.AppliedNone, "busy", 0)
		p.forward(w, r, raw, start, l)
		return
	}
	defer place.finish() // (a panic in prepare too)
	body, ok := p.prepare(w, r, raw, codec, countOnly, l, place)
	place.finish()
	if ok {
		done := func() {}
		body = p.addRecallTool(r, codec, body, countOnly)
		if _, ok := codec.(view.Meter); ok && info(r.Context()).billable {
			// Its answers are read for measured usage (usage.go): asked
			// unencoded, as the recall tool asks them.
			r.Header.Del("Accept-Encoding")
		}
		if !countOnly {
			r, done = p.keepAlive(r, body)
		}
		p.forward(w, r, body, start, l)
		done()
	}
}

// readBody reads r's body within max_body_bytes, the body budget and
// BodyReadTimeout. The read deadline is lifted once the body is read:
// the connection's later reads (net/http watching for the client leaving
// while the answer streams) must not time out.
func (p *Proxy) readBody(w http.ResponseWriter, r *http.Request, l *lease) ([]byte, error) {
	rc := http.NewResponseController(w)
	if err := rc.SetReadDeadline(time.Now().Add(p.opts.BodyReadTimeout)); err == nil {
		defer rc.SetReadDeadline(time.Time{})
	}
	return readBody(w, r, p.opts.MaxBodyBytes, l)
}

// refuseBody answers a request whose body could not be read or decoded
// within the limits, and says why on its log line: 413 over a size
// limit, 503 when the body budget stayed full, 408 when the body did not
// arrive in time, 400 when it ended before its Content-Length or was
// malformed; nothing when the client left (499 in the log).
func (p *Proxy) refuseBody(w http.ResponseWriter, r *http.Request, err error) {
	ri := info(r.Context())
	var mbe *http.MaxBytesError
	var obe *overBudgetError
	var ne net.Error
	status, msg := 0, ""
	switch {
	case errors.As(err, &mbe):
		ri.note = fmt.Sprintf("body over max_body_bytes (%d)", p.opts.MaxBodyBytes)
		status, msg = http.StatusRequestEntityTooLarge, fmt.Sprintf("condense-proxy: request body larger than %d bytes", p.opts.MaxBodyBytes)
	case errors.Is(err, errTooLarge):
		limit := p.decodedLimit()
		ri.note = fmt.Sprintf("decoded body over %d bytes (the smaller of max_body_bytes and max_decompressed_bytes); refused while decoding", limit)
		status, msg = http.StatusRequestEntityTooLarge, fmt.Sprintf("condense-proxy: decoded request body larger than %d bytes", limit)
	case errors.As(err, &obe):
		ri.note = obe.Error()
		status, msg = http.StatusRequestEntityTooLarge, "condense-proxy: request body too large for the proxy's body memory"
	case errors.Is(err, errBudgetBusy):
		ri.note = fmt.Sprintf("%v (%d bytes); refused after waiting %s", err, p.opts.BodyBudgetBytes, p.opts.InflightWait)
		w.Header().Set("Retry-After", "1")
		status, msg = http.StatusServiceUnavailable, "condense-proxy: too many large request bodies at once; retry shortly"
	case errors.Is(err, os.ErrDeadlineExceeded) || errors.As(err, &ne) && ne.Timeout():
		ri.note = fmt.Sprintf("request body not received within %s", p.opts.BodyReadTimeout)
		status, msg = http.StatusRequestTimeout, "condense-proxy: request body not received in time"
	case errors.Is(err, io.ErrUnexpectedEOF):
		ri.note = "request body ended before its announced length"
		status, msg = http.StatusBadRequest, "condense-proxy: request body shorter than its Content-Length"
	case r.Context().Err() != nil:
		ri.status = StatusClientClosed
		ri.note = "client left while sending the body: " + err.Error()
		return
	default:
		ri.note = "reading request body: " + err.Error()
		status, msg = http.StatusBadRequest, "condense-proxy: request body could not be read"
	}
	if status != http.StatusServiceUnavailable {
		w.Header().Set("Connection", "close")
	}
	typ := "invalid_request_error"
	if status == http.StatusServiceUnavailable {
		typ = "server_error"
	}
	writeError(w, r, status, typ, msg)
}

// decodedLimit is the largest decoded body: the smaller of MaxBodyBytes
// and MaxDecompressedBytes.
func (p *Proxy) decodedLimit() int64 {
	return min(p.opts.MaxBodyBytes, p.opts.MaxDecompressedBytes)
}

// prepare reads, decodes and condenses r's body, holding one of the
// in-flight places and taking the body's memory from l. It returns the
// body to forward, or false when it answered the request itself (413…)
// or the client left.
func (p *Proxy) prepare(w http.ResponseWriter, r *http.Request, raw []byte, codec view.Codec, countOnly bool, l *lease, place condense.Slot) ([]byte, bool) {
	ri := info(r.Context())
	body, decoded, err := decodeBody(raw, r.Header.Get("Content-Encoding"), p.decodedLimit(), l)
	var undecodable *undecodableError
	switch {
	case errors.As(err, &undecodable):
		// Not ours to judge: the upstream sees exactly what was sent.
		ri.note = "body not decodable (" + err.Error() + "); forwarded unchanged"
		return raw, true
	case err != nil:
		p.refuseBody(w, r, err)
		return nil, false
	}
	if decoded {
		r.Header.Del("Content-Encoding")
		l.shrink(int64(cap(raw))) // the encoded bytes are no longer needed
		raw = nil
	}

	mode := p.opts.DefaultMode
	if h := strings.ToLower(strings.TrimSpace(r.Header.Get(HeaderMode))); h != "" {
		if condense.ValidMode(h) {
			mode = h
		} else {
			shown := clipName(h, maxModeShown)
			ri.note = fmt.Sprintf("unknown %s %q; using %s", HeaderMode, shown, mode)
			if p.modes.first(shown) {
				p.log.Warn("unknown "+HeaderMode+" value; using the default (logged once per value)",
					"value", shown, "mode", mode, "valid", strings.Join(condense.Modes, ","))
			}
		}
	}
	ri.mode = mode
	w.Header().Set(HeaderMode, mode)
	force, _ := strconv.ParseBool(r.Header.Get(HeaderForce))

	res, err := p.opts.Condenser.Condense(r.Context(), condense.Request{
		Body:        body,
		Codec:       codec,
		Mode:        mode,
		Force:       force,
		Scope:       ri.scope,
		Credentials: p.opts.Scoper.Credentials(callerHeader(r)),
		CountOnly:   countOnly,
		Slot:        place,
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
	rep.Model = ModelName(rep.Model)
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
		if rep.Cold {
			h.Set(HeaderCold, "true")
		}
		if rep.Arm != "" {
			h.Set(HeaderArm, rep.Arm)
		}
		if rep.Applied == condense.AppliedObserve {
			h.Set(HeaderWouldApply, rep.WouldApply)
			h.Set(HeaderWouldTokensAfter, strconv.Itoa(rep.WouldTokensAfter))
		}
		if !countOnly {
			p.metrics.observeReport(rep)
			ri.billable = true // once the upstream's status says it was (middleware.go)
		}
	}
	for _, hd := range res.Headers {
		addListHeader(r.Header, hd.Name, hd.Value)
	}
	if s, ok := codec.(view.Stripper); ok && p.opts.StripContextManagement {
		body, remove := s.StripExtras(res.Body)
		for _, hd := range remove {
			removeListHeader(r.Header, hd.Name, hd.Value)
		}
		return body, true
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

// setBody makes body r's, read through rc, replayable (GetBody) and with
// its length.
func setBody(r *http.Request, rc io.ReadCloser, body []byte) {
	r.Body = rc
	r.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	r.ContentLength = int64(len(body))
	r.Header.Set("Content-Length", strconv.Itoa(len(body)))
}

// forward sends body upstream in place of r's; l's bytes go back to the
// budget once the transport is done sending it.
func (p *Proxy) forward(w http.ResponseWriter, r *http.Request, body []byte, start time.Time, l *lease) {
	setBody(r, leasedBody{bytes.NewReader(body), l}, body)
	ri := info(r.Context())
	ri.overhead = time.Since(start)
	p.metrics.overhead.Observe(ri.overhead.Seconds())
	p.rp.ServeHTTP(w, r)
}

// leasedBody is a forwarded body whose memory is counted in the body
// budget until the transport closes it.
type leasedBody struct {
	*bytes.Reader
	l *lease
}

func (b leasedBody) Close() error {
	b.l.release()
	return nil
}
