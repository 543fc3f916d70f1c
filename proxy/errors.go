package proxy

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
)

// StatusClientClosed is the status recorded (never sent) when the client
// went away before the answer: nginx's 499.
const StatusClientClosed = 499

// statusFor maps an upstream error to the status the client gets: the
// client leaving is 499 (and not an upstream failure), a timeout is 504,
// anything else 502.
func statusFor(err error) int {
	var ne net.Error
	switch {
	case errors.Is(err, context.Canceled):
		return StatusClientClosed
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		return http.StatusGatewayTimeout
	default:
		return http.StatusBadGateway
	}
}

// writeError writes an error body in the shape of the request's API: its
// route's codec's (logRequests records it), OpenAI's when none is known.
func writeError(w http.ResponseWriter, r *http.Request, status int, typ, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	var body []byte
	if c := info(r.Context()).codec; c != nil {
		body = c.Error(status, typ, msg)
	} else {
		body, _ = json.Marshal(map[string]any{"error": map[string]any{"message": msg, "type": typ, "param": nil, "code": nil}})
	}
	w.Write(body)
}

// upstreamError is the ReverseProxy's ErrorHandler: every failure to get
// an answer from the upstream goes through it.
func (p *Proxy) upstreamError(w http.ResponseWriter, r *http.Request, err error) {
	status := statusFor(err)
	ri := info(r.Context())
	ri.upstreamErr = err
	if status == StatusClientClosed {
		// Nobody is listening; record the status for the log only.
		ri.status = StatusClientClosed
		return
	}
	p.metrics.upstreamErrors.WithLabelValues(http.StatusText(status)).Inc()
	msg := "condense-proxy: upstream unreachable"
	if status == http.StatusGatewayTimeout {
		msg = "condense-proxy: upstream timed out"
	}
	writeError(w, r, status, "upstream_error", msg)
}
