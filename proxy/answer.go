package proxy

import (
	"context"
	"io"
	"net/http"
	"strings"
	"sync"

	"github.com/condense-proxy/condense-proxy/view"
)

// KeepAlive is told of every request a condensing route forwards, with
// what it takes to send it again, and watches its answer: package
// keepalive's Keeper (adapted by internal/app) re-sends a conversation's
// last request before its prompt cache expires.
type KeepAlive interface {
	// Forwarded is called on the request's goroutine just before the
	// request goes upstream. It returns the observer of the answer, or
	// nil when the answer does not matter to it.
	Forwarded(ctx context.Context, req KeepAliveRequest) AnswerObserver
}

// KeepAliveRequest is a request as forwarded.
type KeepAliveRequest struct {
	Scope        string // the caller's scope
	Conversation string // the engine's conversation id within it
	Format       string // the wire format (chat, messages, responses)
	// Codec is the route's codec: it reads the answers (view.Meter)
	// and writes requests of its format.
	Codec    view.Codec
	Model    string
	Path     string // the request's path, under the upstream's base
	RawQuery string // its query, without "?"
	// Header is a copy of the headers forwarded (the caller's
	// credentials included): the receiver owns it.
	Header http.Header
	// Body is the body forwarded; it must not be changed.
	Body []byte
	// Tokens is the forwarded request's size (the engine's count);
	// Received the request's as received.
	Tokens, Received int
}

// AnswerObserver sees an answer as it flows to the client: the bytes are
// handed over as they are copied, never held back or buffered by the
// proxy. Called on the request's goroutine, so every method must be
// quick and must not block.
type AnswerObserver interface {
	// Start is given the answer's status and headers; false: its body is
	// not wanted (End is still called).
	Start(status int, h http.Header) bool
	// Write is given the body's next bytes; it must not keep b.
	Write(b []byte)
	// End is called once: complete when the body was read to its end,
	// false when it failed, was cut, or no answer came.
	End(complete bool)
}

type answerKey struct{}

// answerWatch ties an AnswerObserver to one request.
type answerWatch struct {
	obs  AnswerObserver
	once sync.Once
}

func (a *answerWatch) end(complete bool) { a.once.Do(func() { a.obs.End(complete) }) }

// keepAlive tells the KeepAlive of a request about to be forwarded with
// body. It returns the request to forward (carrying the answer's
// observer) and what to call once it is done.
func (p *Proxy) keepAlive(r *http.Request, body []byte) (*http.Request, func()) {
	ri := info(r.Context())
	if p.opts.KeepAlive == nil || ri.report == nil || !ri.report.Counted || ri.report.Conversation == "" {
		return r, func() {}
	}
	rep := ri.report
	// A format that streams by its path is pinged at its unstreamed one.
	path, query := r.URL.Path, r.URL.RawQuery
	if pp, ok := ri.codec.(view.PingPather); ok {
		path, query = pp.PingPath(path, query)
	}
	obs := p.opts.KeepAlive.Forwarded(r.Context(), KeepAliveRequest{
		Scope:        ri.scope,
		Conversation: rep.Conversation,
		Format:       rep.Format,
		Codec:        ri.codec,
		Model:        rep.Model,
		Path:         path,
		RawQuery:     query,
		Header:       forwardedHeader(r.Header),
		Body:         body,
		Tokens:       rep.TokensAfter,
		Received:     rep.TokensBefore,
	})
	if obs == nil {
		return r, func() {}
	}
	a := &answerWatch{obs: obs}
	return r.WithContext(context.WithValue(r.Context(), answerKey{}, a)), func() { a.end(false) }
}

// watchAnswer, in the ReverseProxy's ModifyResponse, tees the answer's
// body to the request's observer, if it has one.
func watchAnswer(res *http.Response) {
	a, _ := res.Request.Context().Value(answerKey{}).(*answerWatch)
	if a == nil {
		return
	}
	if !a.obs.Start(res.StatusCode, res.Header) {
		a.end(false)
		return
	}
	res.Body = &teeBody{ReadCloser: res.Body, a: a}
}

// teeBody hands what is read to the observer as it passes.
type teeBody struct {
	io.ReadCloser
	a *answerWatch
}

func (t *teeBody) Read(b []byte) (int, error) {
	n, err := t.ReadCloser.Read(b)
	if n > 0 {
		t.a.obs.Write(b[:n])
	}
	switch {
	case err == io.EOF:
		t.a.end(true)
	case err != nil:
		t.a.end(false)
	}
	return n, err
}

func (t *teeBody) Close() error {
	t.a.end(false)
	return t.ReadCloser.Close()
}

// forwardedHeader is a copy of h as the upstream gets it: the proxy's own
// headers, the forwarding and hop-by-hop ones dropped (as Rewrite and
// net/http do), and the body's length left to whoever sends it.
func forwardedHeader(h http.Header) http.Header {
	out := h.Clone()
	for k := range out {
		lk := strings.ToLower(k)
		if strings.HasPrefix(lk, "x-condense-") || strings.HasPrefix(lk, "x-forwarded-") {
			out.Del(k)
		}
	}
	for _, v := range out.Values("Connection") {
		for _, f := range strings.Split(v, ",") {
			if f = strings.TrimSpace(f); f != "" {
				out.Del(f)
			}
		}
	}
	for _, k := range []string{"Forwarded", "X-Original-Url", "X-Rewrite-Url", "Content-Length", "Connection",
		"Proxy-Connection", "Keep-Alive", "Proxy-Authenticate", "Proxy-Authorization", "Te", "Trailer",
		"Transfer-Encoding", "Upgrade"} {
		out.Del(k)
	}
	return out
}
