package proxy

import (
	"context"
	"log/slog"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"

	"github.com/condense-proxy/condense-proxy/condense"
	"github.com/condense-proxy/condense-proxy/memory"
	"github.com/condense-proxy/condense-proxy/view"
)

type ctxKey struct{}

// maxPathShown bounds the request path on a log line.
const maxPathShown = 512

// reqInfo collects what the request's log line and metrics report. The
// handlers fill it; logRequests writes it.
type reqInfo struct {
	route  string
	codec  view.Codec // of the route's API: the shape of its errors
	status int
	report *condense.Report
	mode   string
	scope  string // the caller's scope, once the handler computed it
	// queryKey is a key the request carried in its query (Gemini's
	// ?key=), which scopes the caller like a credential header; never
	// logged.
	queryKey    string
	upstreamErr error
	overhead    time.Duration // time spent before the upstream was called
	note        string
	// recall is set when the request carries the recall tool; recalls
	// are the calls the proxy answered (recall.go).
	recall  *recallState
	recalls []memory.Recalled
	// billable: the report's bill counts if the upstream answers with
	// success (a request it refused or failed costs nothing).
	billable bool
	// answers are the upstream's answers read for measured usage (the
	// first, then each recall round's: usage.go); measured is what they
	// reported, once the request was billed.
	answers  []*meteredBody
	measured *Measured
}

// billed reports whether a request answered with status was billed by
// the upstream: a success, not a refusal or a failure.
func billed(status int, upstreamErr error) bool {
	return upstreamErr == nil && status >= 200 && status < 400
}

// unbill clears a report's estimated bill: the request was not billed.
func unbill(rep *condense.Report) {
	rep.CacheRead, rep.CacheWrite, rep.Bill = 0, 0, 0
	rep.UncondensedRead, rep.UncondensedWrite, rep.BillUncondensed = 0, 0, 0
	rep.WouldCacheRead, rep.WouldCacheWrite, rep.WouldBill = 0, 0, 0
}

func info(ctx context.Context) *reqInfo {
	if ri, ok := ctx.Value(ctxKey{}).(*reqInfo); ok {
		return ri
	}
	return &reqInfo{}
}

// logRequests writes one log line per request and records the request
// metrics. It never logs headers or bodies.
func (p *Proxy) logRequests(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		ri := &reqInfo{codec: p.codecOf(r)}
		ww := middleware.NewWrapResponseWriter(w, r.ProtoMajor)
		defer func() {
			rec := recover()
			clientLeft := false
			if rec != nil {
				// The response was cut short after it started. A client
				// that left is not an upstream failure.
				if r.Context().Err() != nil {
					clientLeft = true
					ri.status = StatusClientClosed
					ri.note = "client left mid-response"
				} else {
					ri.note = "connection aborted: upstream failed mid-response"
				}
			}
			status := ww.Status()
			if ri.status != 0 {
				status = ri.status
			}
			if status == 0 {
				status = http.StatusOK
			}
			route := ri.route
			if route == "" {
				route = chi.RouteContext(r.Context()).RoutePattern()
			}
			if route == "" {
				route = "other"
			}
			p.metrics.requests.WithLabelValues(route, strconv.Itoa(status)).Inc()
			if rep := ri.report; rep != nil && ri.billable {
				if billed(status, ri.upstreamErr) {
					p.metrics.observeBilled(*rep)
					if rec == nil {
						ri.measured = p.measure(ri)
						p.metrics.observeMeasured(*rep, ri.measured)
					}
				} else {
					unbill(rep) // the log line, the page: nothing billed
				}
			}
			attrs := []slog.Attr{
				slog.String("method", r.Method),
				slog.String("path", clipName(r.URL.Path, maxPathShown)),
				slog.String("route", route),
				slog.Int("status", status),
				slog.Int("bytes_out", ww.BytesWritten()),
				slog.Duration("duration", time.Since(start)),
			}
			if rep := ri.report; rep != nil && rep.Counted {
				attrs = append(attrs,
					slog.String("model", rep.Model),
					slog.String("mode", ri.mode),
					slog.String("applied", rep.Applied),
					slog.Int("messages", rep.Messages),
					slog.Int("tokens_before", rep.TokensBefore),
					slog.Int("tokens_after", rep.TokensAfter),
					slog.Int("trigger", rep.Trigger),
					slog.Int("prefix_reused", rep.PrefixReused),
					slog.String("reason", rep.Reason),
					slog.String("reason_path", strings.Join(rep.Path, ",")),
					slog.Duration("overhead", ri.overhead),
				)
				if rep.Summaries != "" {
					attrs = append(attrs, slog.String("summaries", rep.Summaries), slog.String("cache", rep.Cache))
				}
				if rep.Summaries != "" || rep.Calls > 0 {
					attrs = append(attrs, slog.Int("summarizer_calls", rep.Calls))
				}
				attrs = append(attrs, slog.Int("cache_read", rep.CacheRead), slog.Int("cache_write", rep.CacheWrite),
					slog.Float64("bill", round1(rep.Bill)), slog.Float64("bill_uncondensed", round1(rep.BillUncondensed)))
				attrs = append(attrs, measuredAttrs(ri.measured, rep)...)
				if rep.Arm != "" {
					attrs = append(attrs, slog.String("arm", rep.Arm))
				}
				if rep.Cold {
					attrs = append(attrs, slog.Bool("cold", true))
				}
				if rep.WouldApply != "" {
					attrs = append(attrs, slog.String("would_apply", rep.WouldApply), slog.Int("would_tokens_after", rep.WouldTokensAfter),
						slog.Float64("would_bill", round1(rep.WouldBill)))
				}
				if rep.Degraded != "" {
					attrs = append(attrs, slog.String("degraded", rep.Degraded), slog.String("degraded_kinds", strings.Join(rep.DegradedKinds, ",")))
				}
				if rep.AgentCompaction != "" {
					attrs = append(attrs, slog.String("agent_compaction", rep.AgentCompaction))
				}
				if len(ri.recalls) > 0 {
					attrs = append(attrs, slog.Int("recalls", len(ri.recalls)))
				}
			}
			if ri.note != "" {
				attrs = append(attrs, slog.String("note", ri.note))
			}
			level := slog.LevelInfo
			if ri.upstreamErr != nil {
				attrs = append(attrs, slog.String("upstream_error", ri.upstreamErr.Error()))
				if status != StatusClientClosed {
					level = slog.LevelWarn
				}
			}
			if route == "/healthz" || route == "/readyz" || route == "/metrics" || isUIPath(r.URL.Path) {
				level = slog.LevelDebug
			}
			if rec != nil && !clientLeft {
				level = slog.LevelWarn
			}
			p.log.LogAttrs(r.Context(), level, "request", attrs...)
			p.record(r, ri, status, start)
			if rec != nil {
				panic(rec)
			}
		}()
		next.ServeHTTP(ww, r.WithContext(context.WithValue(r.Context(), ctxKey{}, ri)))
	})
}

// recoverer turns a handler panic into a 500, except http.ErrAbortHandler,
// which must reach net/http so it aborts the connection (a stream that
// failed midway is cut, never ended cleanly).
func recoverer(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			if v := recover(); v != nil {
				if v == http.ErrAbortHandler {
					panic(v)
				}
				slog.Error("handler panic", "panic", v, "path", r.URL.Path)
				writeError(w, r, http.StatusInternalServerError, "server_error", "condense-proxy: internal error")
			}
		}()
		next.ServeHTTP(w, r)
	})
}

// round1 rounds an estimate for the log line.
func round1(f float64) float64 { return math.Round(f*10) / 10 }
