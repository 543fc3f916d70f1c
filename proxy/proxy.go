// Package proxy is condense-proxy's HTTP front: a chi router that condenses
// chat-completions requests on their way to the upstream and passes every
// other request through untouched.
//
// A chat request travels like this: the body is read (bounded), decoded if
// it carries a Content-Encoding, and handed raw to the Condenser with the
// mode from X-Condense-Mode; the body the Condenser returns — the received
// bytes themselves when nothing was done — goes to the upstream through an
// httputil.ReverseProxy, which streams the answer back (server-sent events
// are flushed chunk by chunk). The Condenser's report becomes X-Condense-*
// response headers, metrics and the request's log line.
//
// The proxy never parses messages itself, never logs a body or a
// credential, and strips its own X-Condense-* request headers before
// forwarding.
package proxy

import (
	"context"
	"encoding/json"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/condense-proxy/condense-proxy/condense"
)

// Condenser condenses one chat request; package condense's Engine is one.
type Condenser interface {
	Condense(ctx context.Context, req condense.Request) (condense.Result, error)
}

// Originals returns the original messages behind a summary or marker id,
// for the caller with the given scope.
type Originals interface {
	Originals(ctx context.Context, scope, id string) ([]byte, bool)
}

// Pinger reports whether a dependency (the cache) is reachable.
type Pinger interface {
	Ping(ctx context.Context) error
}

// Options configures the proxy. Upstream and Condenser are required.
type Options struct {
	// Upstream is the base URL; the request path is appended to it.
	Upstream *url.URL
	// Condenser decides and condenses chat requests.
	Condenser Condenser
	// DefaultMode is used when a request has no X-Condense-Mode header.
	// Default condense.ModeAuto.
	DefaultMode string
	// MaxBodyBytes bounds a chat body as received (413 above). Default 64 MiB.
	MaxBodyBytes int64
	// MaxDecompressedBytes bounds a decoded body (413 above). Default 128 MiB.
	MaxDecompressedBytes int64
	// Transport sends requests upstream. Nil: NewTransport(TransportOptions{}).
	Transport http.RoundTripper
	// Originals serves GET /v1/condense/originals/{id}; nil: 404.
	Originals Originals
	// Cache is pinged by /readyz; nil means no cache check.
	Cache Pinger
	// CacheDegraded, if set, tells /readyz the cache runs degraded (Redis
	// down, misses served) rather than failing.
	CacheDegraded func() bool
	// Metrics receives counts; nil: a fresh registry.
	Metrics *Metrics
	// Logger receives one line per request; nil: slog.Default().
	Logger *slog.Logger
	// AuthKeys, if not empty, are the only inbound keys accepted; other
	// requests get 401 before anything else happens. Default: none (no
	// inbound auth).
	AuthKeys []string
}

// Proxy is the HTTP handler. Safe for concurrent use.
type Proxy struct {
	opts    Options
	rp      *httputil.ReverseProxy
	log     *slog.Logger
	metrics *Metrics
	router  chi.Router
}

var _ http.Handler = (*Proxy)(nil)

// TransportOptions sizes the upstream transport.
type TransportOptions struct {
	// ConnectTimeout bounds dialing. Default 10s.
	ConnectTimeout time.Duration
	// HeaderTimeout bounds the wait for response headers; 0: none.
	HeaderTimeout time.Duration
	// MaxIdleConns is the idle pool toward the (single) upstream. Default 512.
	MaxIdleConns int
}

// NewTransport returns a transport sized for one busy upstream: a large
// idle pool for that one host instead of net/http's 2 idle connections.
func NewTransport(o TransportOptions) *http.Transport {
	if o.ConnectTimeout <= 0 {
		o.ConnectTimeout = 10 * time.Second
	}
	if o.MaxIdleConns <= 0 {
		o.MaxIdleConns = 512
	}
	return &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           (&net.Dialer{Timeout: o.ConnectTimeout, KeepAlive: 30 * time.Second}).DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          o.MaxIdleConns,
		MaxIdleConnsPerHost:   o.MaxIdleConns,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   o.ConnectTimeout,
		ResponseHeaderTimeout: o.HeaderTimeout,
		ExpectContinueTimeout: time.Second,
	}
}

// New returns the proxy handler.
func New(o Options) *Proxy {
	if o.DefaultMode == "" {
		o.DefaultMode = condense.ModeAuto
	}
	if o.MaxBodyBytes <= 0 {
		o.MaxBodyBytes = 64 << 20
	}
	if o.MaxDecompressedBytes <= 0 {
		o.MaxDecompressedBytes = 128 << 20
	}
	if o.Transport == nil {
		o.Transport = NewTransport(TransportOptions{})
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Metrics == nil {
		o.Metrics = NewMetrics(nil)
	}
	p := &Proxy{opts: o, log: o.Logger, metrics: o.Metrics}
	upstream := o.Upstream
	p.rp = &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(upstream)
			for k := range pr.Out.Header {
				if strings.HasPrefix(strings.ToLower(k), "x-condense-") {
					pr.Out.Header.Del(k)
				}
			}
		},
		Transport:     o.Transport,
		FlushInterval: -1,
		ErrorHandler:  p.upstreamError,
		ErrorLog:      slog.NewLogLogger(o.Logger.Handler(), slog.LevelWarn),
	}

	r := chi.NewRouter()
	r.Use(p.logRequests, recoverer, requireKey(o.AuthKeys))
	r.Get("/healthz", p.healthz)
	r.Get("/readyz", p.readyz)
	r.Method(http.MethodGet, "/metrics", o.Metrics.Handler())
	r.Post("/v1/chat/completions", p.chat)
	r.Post("/chat/completions", p.chat)
	r.Get("/v1/condense/originals/{id}", p.originals)
	r.NotFound(p.passthrough)
	r.MethodNotAllowed(p.passthrough)
	p.router = r
	return p
}

// ServeHTTP implements http.Handler.
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p.router.ServeHTTP(w, r)
}

// Handle adds a route in front of the pass-through (for endpoints other
// packages provide).
func (p *Proxy) Handle(method, pattern string, h http.Handler) {
	p.router.Method(method, pattern, h)
}

// originals returns the messages a summary or marker replaced, only to the
// caller whose credentials condensed them (404 for anyone else).
func (p *Proxy) originals(w http.ResponseWriter, r *http.Request) {
	id := chi.URLParam(r, "id")
	if p.opts.Originals == nil {
		writeError(w, http.StatusNotFound, "not_found", "condense-proxy: no originals store")
		return
	}
	v, ok := p.opts.Originals.Originals(r.Context(), Scope(r.Header), id)
	if !ok {
		writeError(w, http.StatusNotFound, "not_found", "condense-proxy: no originals under that id for this caller (expired, or another key)")
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Write([]byte(`{"id":`))
	idJSON, _ := json.Marshal(id)
	w.Write(idJSON)
	w.Write([]byte(`,"messages":`))
	w.Write(v)
	w.Write([]byte("}\n"))
}

// passthrough forwards a request unchanged.
func (p *Proxy) passthrough(w http.ResponseWriter, r *http.Request) {
	info(r.Context()).route = "passthrough"
	p.rp.ServeHTTP(w, r)
}
