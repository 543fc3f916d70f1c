// Package ui is condense-proxy's live page: what the proxy did to each
// conversation, served at /ui by the proxy itself.
//
// A UI is two things. As a proxy.Recorder it receives an Event for every
// condensable request once answered and keeps a bounded in-memory record:
// overview counters since start, and per caller scope and conversation its
// recent requests (tokens, mode, changes) with the texts and shapes of the
// condensed ones. As an http.Handler it serves the page — one HTML
// document with its CSS and JavaScript inline, embedded in the binary,
// nothing fetched from elsewhere — and the JSON and server-sent-event
// endpoints the page reads:
//
//	GET /ui                                          the page
//	GET /ui/api/overview                             counters, per mode, per model, per minute
//	GET /ui/api/conversations                        recent conversations, newest first
//	GET /ui/api/conversations/{id}                   one conversation's requests (its timeline)
//	GET /ui/api/conversations/{id}/requests/{n}      one request: changes and shapes
//	GET /ui/api/conversations/{id}/originals/{oid}   what a change replaced (Options.Originals)
//	GET /ui/api/events                               server-sent events: "update" when the record changes
//
// Who sees what (see viewerOf): with keys configured, an accepted key is
// needed (401 otherwise); admin keys see everything, other keys their own
// scope's conversations; the originals behind a change open for whoever
// may read its conversation, admin keys included (Options.Originals).
// With no keys, everyone sees numbers only (with Options.TrustLoopback,
// loopback clients see everything). The record is this process's: each
// replica has its own.
package ui

import (
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/condense-proxy/condense-proxy/proxy"
)

// Options configures a UI. Zero values pick the defaults.
type Options struct {
	// MaxConversations bounds the conversations kept; the least recently
	// active is dropped. Default 100.
	MaxConversations int
	// MaxRequestsPerConversation bounds the requests kept per
	// conversation; the oldest is dropped. Default 500.
	MaxRequestsPerConversation int
	// MaxDetailBytes bounds the texts and shapes kept for the detail view,
	// over all conversations; the oldest are dropped. Default 32 MiB.
	MaxDetailBytes int
	// AuthKeys are the proxy's accepted inbound keys (auth.keys): each
	// opens the page for its own scope's conversations.
	AuthKeys []string
	// AdminKeys (ui.keys) open the page for every conversation.
	AdminKeys []string
	// TrustLoopback, when no keys are configured, shows loopback clients
	// whose request came through no forwarding proxy every conversation
	// with its content (for a demo on one's own machine). Default false:
	// without keys everyone sees numbers only; content needs a key. A
	// socket address alone cannot tell a person at the machine from a
	// reverse proxy on the same host relaying anyone.
	TrustLoopback bool
	// Scope maps request headers to the caller scope the proxy records
	// (the proxy's own function). Nil: no key owns a conversation, so
	// non-admin keys see none.
	Scope func(http.Header) string
	// Originals, when set, serves the page's originals endpoint
	// (GET /ui/api/conversations/{id}/originals/{oid}): the originals
	// behind a change, read in the conversation's caller scope, for any
	// viewer that may read the conversation — an admin key (ui.keys)
	// included, the only way an admin key reads another caller's
	// originals. Nil: the page links to the proxy's
	// /v1/condense/originals/{id}, which answers only the caller's own key.
	Originals proxy.Originals
}

// UI records requests and serves the page. Safe for concurrent use.
type UI struct {
	opts    Options
	st      *store
	admin   keyring
	callers keyring
	mux     *http.ServeMux
	now     func() time.Time

	streams   atomic.Int32
	done      chan struct{}
	closeOnce sync.Once
}

var (
	_ proxy.Recorder = (*UI)(nil)
	_ http.Handler   = (*UI)(nil)
)

// maxStreams bounds concurrent event streams; the page polls past it.
const maxStreams = 32

// New returns a UI.
func New(o Options) *UI {
	if o.MaxConversations <= 0 {
		o.MaxConversations = 100
	}
	if o.MaxRequestsPerConversation <= 0 {
		o.MaxRequestsPerConversation = 500
	}
	if o.MaxDetailBytes <= 0 {
		o.MaxDetailBytes = 32 << 20
	}
	u := &UI{
		opts:    o,
		st:      newStore(o.MaxConversations, o.MaxRequestsPerConversation, o.MaxDetailBytes, time.Now()),
		admin:   newKeyring(o.AdminKeys),
		callers: newKeyring(o.AuthKeys),
		now:     time.Now,
		done:    make(chan struct{}),
	}
	m := http.NewServeMux()
	m.HandleFunc("GET /ui", u.page)
	m.HandleFunc("GET /ui/{$}", u.page)
	m.HandleFunc("GET /ui/api/overview", u.overview)
	m.HandleFunc("GET /ui/api/conversations", u.conversations)
	m.HandleFunc("GET /ui/api/conversations/{id}", u.conversation)
	m.HandleFunc("GET /ui/api/conversations/{id}/requests/{n}", u.request)
	m.HandleFunc("GET /ui/api/conversations/{id}/originals/{oid}", u.originals)
	m.HandleFunc("GET /ui/api/events", u.events)
	m.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeJSONError(w, http.StatusNotFound, "no such page endpoint")
	})
	u.mux = m
	return u
}

// Record implements proxy.Recorder: it adds ev to the record.
func (u *UI) Record(ev proxy.Event) { u.st.record(&ev) }

// ServeHTTP serves the page and its data under /ui.
func (u *UI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Frame-Options", "DENY")
	u.mux.ServeHTTP(w, r)
}

// Close ends the event streams (for server shutdown, which otherwise
// waits for them). The page keeps serving; new streams end at once.
func (u *UI) Close() {
	u.closeOnce.Do(func() { close(u.done) })
}
