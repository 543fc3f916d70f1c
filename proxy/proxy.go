// Package proxy is condense-proxy's HTTP front: a chi router that condenses
// chat-completions and Responses requests on their way to the upstream and
// passes every other request through untouched (WebSocket upgrades
// included).
//
// A condensing route's request travels like this: the body is read (bounded), decoded if
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
	"runtime"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/condense-proxy/condense-proxy/codec/chat"
	"github.com/condense-proxy/condense-proxy/codec/gemini"
	"github.com/condense-proxy/condense-proxy/codec/messages"
	"github.com/condense-proxy/condense-proxy/codec/responses"
	"github.com/condense-proxy/condense-proxy/condense"
	"github.com/condense-proxy/condense-proxy/tokenizer"
	"github.com/condense-proxy/condense-proxy/view"
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
	// Condenser decides and condenses requests.
	Condenser Condenser
	// Codecs are the wire formats condensed, by route. A nil codec: a
	// fresh one with its own token counter (wiring passes codecs sharing
	// the engine's counter and its limits).
	Codecs Codecs
	// DefaultMode is used when a request has no X-Condense-Mode header.
	// Default condense.ModeAuto.
	DefaultMode string
	// MaxBodyBytes bounds a chat body as received (413 above; a larger
	// Content-Length is refused before anything is read), and its decoded
	// size too. Default 64 MiB.
	MaxBodyBytes int64
	// MaxDecompressedBytes bounds a decoded body (413 above) when it is
	// smaller than MaxBodyBytes. Default 128 MiB.
	MaxDecompressedBytes int64
	// BodyBudgetBytes bounds the memory of the bodies being read, decoded
	// and condensed, over all requests at once: each buffer takes its
	// bytes from it before it is made, and the bytes come back when the
	// body has been sent upstream. A request that finds too few waits up
	// to InflightWait, then gets 503 with Retry-After (a request needing
	// more than the whole budget gets 413). Default 4 × MaxBodyBytes.
	BodyBudgetBytes int64
	// BodyReadTimeout bounds the time a condensing route's body takes to
	// arrive (408 past it); the upstream's answer is not bounded. Default
	// 60s.
	BodyReadTimeout time.Duration
	// MaxInflight caps the chat requests being read and condensed at once.
	// A request finding no place waits up to InflightWait for one, then is
	// forwarded unchanged (its body streamed, not counted) with
	// X-Condense-Degraded saying so. 0: 4 × GOMAXPROCS.
	MaxInflight int
	// InflightWait is how long a request waits for a place, or for body
	// bytes from BodyBudgetBytes. 0: 1s.
	InflightWait time.Duration
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
	// Scoper maps a request's credentials to the caller's scope (cache
	// keys, originals, the live page) and picks the headers the
	// summarizer's calls carry. Nil: NewScoper(nil, nil), a random secret
	// over CredentialHeaders.
	Scoper *Scoper

	// StripContextManagement removes context_management from Messages
	// requests (and /count_tokens), and its beta from anthropic-beta,
	// before forwarding. Default false: forwarded as received.
	StripContextManagement bool

	// Recorder, if set, receives an Event per condensable request once it
	// is answered (the live page's record). Nil: nothing is kept.
	Recorder Recorder
	// UI, if set, is mounted at /ui and /ui/… (the live page). It does its
	// own authentication: AuthKeys do not guard it. Nil: those paths pass
	// through like any other.
	UI http.Handler
	// KeepAlive, if set, is told of every request a condensing route
	// forwards and sees its answer (keep-alive pings). Nil: nothing.
	KeepAlive KeepAlive

	// Recall answers condense_recall calls (recall.go); with RecallTool
	// the tool is added to every request of a condensed conversation.
	// Nil or false: no tool is added.
	Recall     Recaller
	RecallTool bool
	// MaxRecallRounds bounds the rounds one answer's recalls are answered
	// in. Default 3.
	MaxRecallRounds int
	// MaxRecallCalls bounds the recall calls of one answer that are
	// answered (the others are left out of the round, and the model told
	// so). Default 4.
	MaxRecallCalls int
	// RecallBudgetTokens bounds one recall's answer. Default 4000 (memory.recall_budget_tokens).
	RecallBudgetTokens int

	// Prices gives a model's prompt-cache prices, for pricing the usage
	// the upstream's answers report (measured usage: usage.go). Nil:
	// 0.1 reads, 1.25 writes, 2 for 1-hour writes (the engine's
	// defaults).
	Prices func(model string) Prices
}

// Codecs holds the codec of each condensing route's wire format.
type Codecs struct {
	Chat      view.Codec // POST /v1/chat/completions, /chat/completions
	Responses view.Codec // POST /v1/responses, /responses
	Messages  view.Codec // POST /v1/messages, /messages and their count_tokens
	// Gemini: POST /v1beta/models/{model}:generateContent,
	// :streamGenerateContent and :countTokens (and under /v1/); a codec
	// that is a view.PathModel gets the path's model.
	Gemini view.Codec
}

// Proxy is the HTTP handler. Safe for concurrent use.
type Proxy struct {
	opts    Options
	rp      *httputil.ReverseProxy
	log     *slog.Logger
	metrics *Metrics
	router  chi.Router
	// codecs maps an API route's pattern to its codec; fallback is the
	// codec of every other route's errors (OpenAI's shape).
	codecs   map[string]view.Codec
	fallback view.Codec
	// inflight bounds the requests being condensed.
	inflight *slots
	// bodies bounds the memory of their bodies.
	bodies *budget
	// modes remembers the unknown X-Condense-Mode values already logged.
	modes *onceSet
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

// defaultMaxInflight is the cap on requests condensed at once when none is
// configured: 4 × GOMAXPROCS (counting and condensing are CPU work; a few
// per core keep the cores busy while some wait for the summarizer).
func defaultMaxInflight() int { return 4 * runtime.GOMAXPROCS(0) }

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
	if o.BodyBudgetBytes <= 0 {
		o.BodyBudgetBytes = 4 * o.MaxBodyBytes
	}
	if o.BodyReadTimeout <= 0 {
		o.BodyReadTimeout = 60 * time.Second
	}
	if o.MaxInflight <= 0 {
		o.MaxInflight = defaultMaxInflight()
	}
	if o.InflightWait <= 0 {
		o.InflightWait = time.Second
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
	if o.Scoper == nil {
		o.Scoper = NewScoper(nil, nil)
	}
	if o.MaxRecallRounds <= 0 {
		o.MaxRecallRounds = 3
	}
	if o.RecallBudgetTokens <= 0 {
		o.RecallBudgetTokens = 4000
	}
	if o.MaxRecallCalls <= 0 {
		o.MaxRecallCalls = defaultMaxRecallCalls
	}
	if o.Codecs.Chat == nil {
		o.Codecs.Chat = chat.New(tokenizer.New(tokenizer.Options{}))
	}
	if o.Codecs.Responses == nil {
		o.Codecs.Responses = responses.New(tokenizer.New(tokenizer.Options{}))
	}
	if o.Codecs.Messages == nil {
		o.Codecs.Messages = messages.New(tokenizer.New(tokenizer.Options{}))
	}
	if o.Codecs.Gemini == nil {
		o.Codecs.Gemini = gemini.New(tokenizer.New(tokenizer.Options{}))
	}
	p := &Proxy{opts: o, log: o.Logger, metrics: o.Metrics, inflight: newSlots(o.MaxInflight),
		bodies: newBudget(o.BodyBudgetBytes), modes: newOnceSet(maxLoggedModes)}
	upstream := o.Upstream
	p.rp = &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			// The upstream's scheme, host and base path, whatever the
			// request line, Host or X-Forwarded-* say (Rewrite drops the
			// X-Forwarded-* and Forwarded headers; SetURL clears Out.Host).
			pr.SetURL(upstream)
			for k := range pr.Out.Header {
				if strings.HasPrefix(strings.ToLower(k), "x-condense-") {
					pr.Out.Header.Del(k)
				}
			}
			// Headers some servers take as the request's real path.
			pr.Out.Header.Del("X-Original-Url")
			pr.Out.Header.Del("X-Rewrite-Url")
		},
		// A protocol switch (a WebSocket on /v1/responses) is handed to
		// the client as the upstream answered; the log says so.
		ModifyResponse: func(res *http.Response) error {
			p.meterAnswer(info(res.Request.Context()), res)
			if err := p.answerRecalls(res); err != nil {
				return err
			}
			watchAnswer(res)
			if res.StatusCode == http.StatusSwitchingProtocols {
				ri := info(res.Request.Context())
				ri.status = res.StatusCode
				ri.note = "switched to " + res.Header.Get("Upgrade") + "; passed through, not condensed"
			}
			return nil
		},
		Transport:     o.Transport,
		FlushInterval: -1,
		ErrorHandler:  p.upstreamError,
		ErrorLog:      slog.NewLogLogger(o.Logger.Handler(), slog.LevelWarn),
	}

	r := chi.NewRouter()
	r.Use(p.logRequests, recoverer, refuseDotSegments)
	// The open routes: no key asked, and nothing forwarded whatever the
	// method (405 for any but their own). Which route a request takes is
	// decided by the router alone, so a path spelled another way
	// (/%68ealthz, /healthz/) is not open: it takes a guarded route.
	r.Handle("/healthz", readOnly(http.HandlerFunc(p.healthz)))
	r.Handle("/readyz", readOnly(http.HandlerFunc(p.readyz)))
	r.Handle("/metrics", readOnly(o.Metrics.Handler()))
	if o.UI != nil {
		// The live page checks keys itself.
		r.Handle("/ui", o.UI)
		r.Handle("/ui/*", o.UI)
	}
	// Every other route, the router's not-found and method-not-allowed
	// answers (which forward) included, asks for a key.
	guard := requireKey(o.AuthKeys)
	g := r.With(guard)
	// The APIs' routes, each with its codec: what it condenses, and the
	// shape of every error it answers itself (logRequests finds it).
	p.codecs = map[string]view.Codec{}
	api := func(method string, h http.Handler, c view.Codec, paths ...string) {
		for _, path := range paths {
			if method == "" {
				g.Handle(path, h)
			} else {
				g.Method(method, path, h)
			}
			p.codecs[path] = c
		}
	}
	api(http.MethodPost, p.condensing("chat", o.Codecs.Chat), o.Codecs.Chat, "/v1/chat/completions", "/chat/completions")
	api(http.MethodPost, p.condensing("responses", o.Codecs.Responses), o.Codecs.Responses, "/v1/responses", "/responses")
	api(http.MethodPost, p.condensing("messages", o.Codecs.Messages), o.Codecs.Messages, "/v1/messages", "/messages")
	api(http.MethodPost, p.counting("messages-count", o.Codecs.Messages), o.Codecs.Messages, "/v1/messages/count_tokens", "/messages/count_tokens")
	// Message batches pass through, answering in Anthropic's shape.
	api("", http.HandlerFunc(p.passthrough), o.Codecs.Messages, "/v1/messages/batches", "/v1/messages/batches/*", "/messages/batches", "/messages/batches/*")
	for _, m := range gemini.Methods {
		route := "gemini"
		if m.CountOnly {
			route = "gemini-count"
		}
		api(http.MethodPost, p.gemini(route, o.Codecs.Gemini, m.CountOnly), o.Codecs.Gemini, gemini.Patterns(m.Name)...)
	}
	// Gemini's other methods and resources pass through, answering in
	// Google's shape.
	api("", http.HandlerFunc(p.passthrough), o.Codecs.Gemini, "/v1beta/*")
	p.fallback = o.Codecs.Chat
	g.Get("/v1/condense/originals/{id}", p.originals)
	r.NotFound(guard(http.HandlerFunc(p.passthrough)).ServeHTTP)
	r.MethodNotAllowed(guard(http.HandlerFunc(p.passthrough)).ServeHTTP)
	p.router = r
	return p
}

// codecOf returns the codec of the API whose route r takes — found
// before any middleware answers, so that every error of a route, a
// refused key included, takes its API's shape — or the fallback. A route
// asked with another method than its own still has its API's codec.
func (p *Proxy) codecOf(r *http.Request) view.Codec {
	for _, method := range []string{r.Method, http.MethodPost} {
		rctx := chi.NewRouteContext()
		if p.router.Match(rctx, method, r.URL.Path) {
			if c, ok := p.codecs[rctx.RoutePattern()]; ok {
				return c
			}
		}
	}
	return p.fallback
}

// ServeHTTP implements http.Handler.
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p.router.ServeHTTP(w, r)
}

// originals returns the messages a summary or marker replaced, only to the
// caller whose credentials condensed them (404 for anyone else).
func (p *Proxy) originals(w http.ResponseWriter, r *http.Request) {
	id := chi.URLParam(r, "id")
	if p.opts.Originals == nil {
		writeError(w, r, http.StatusNotFound, "not_found", "condense-proxy: no originals store")
		return
	}
	v, ok := p.opts.Originals.Originals(r.Context(), p.opts.Scoper.Scope(r.Header), id)
	if !ok {
		writeError(w, r, http.StatusNotFound, "not_found", "condense-proxy: no originals under that id for this caller (expired, or another key)")
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
