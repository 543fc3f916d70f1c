package ui

import (
	"crypto/sha256"
	"crypto/subtle"
	"net"
	"net/http"
	"slices"

	"github.com/condense-proxy/condense-proxy/proxy"
)

// access is what a viewer may see.
type access int

const (
	accessNone    access = iota // 401
	accessNumbers               // counts and tokens of every conversation, no content
	accessCaller                // the conversations of its own scope, with content
	accessAdmin                 // everything
)

func (a access) String() string {
	switch a {
	case accessNumbers:
		return "numbers"
	case accessCaller:
		return "caller"
	case accessAdmin:
		return "admin"
	}
	return "none"
}

// viewer is who asks, as far as the page is concerned.
type viewer struct {
	access access
	scopes []string // accessCaller: the scopes its key makes
}

// sees reports whether c is listed for v at all.
func (v viewer) sees(c *conversation) bool {
	switch v.access {
	case accessAdmin, accessNumbers:
		return true
	case accessCaller:
		return slices.Contains(v.scopes, c.key.scope)
	}
	return false
}

// content reports whether v may read what c's requests said (summary and
// digest texts, tools, ids, degraded reasons, the agent's user-agent).
func (v viewer) content(c *conversation) bool {
	return v.access == accessAdmin || v.access == accessCaller && v.sees(c)
}

// keyring holds the hashes of accepted keys.
type keyring [][32]byte

func newKeyring(keys []string) keyring {
	var k keyring
	for _, s := range keys {
		k = append(k, sha256.Sum256([]byte(s)))
	}
	return k
}

func (k keyring) has(sum [32]byte) bool {
	found := 0
	for _, s := range k {
		found |= subtle.ConstantTimeCompare(sum[:], s[:])
	}
	return found == 1
}

// presentedKeys are the keys a request carries, where the proxy accepts
// them: Authorization: Bearer, X-Api-Key, Api-Key.
func presentedKeys(h http.Header) []string { return proxy.PresentedKeys(h) }

// viewerOf applies the page's rules:
//   - keys configured (auth.keys or ui.keys): an admin key (ui.keys) sees
//     everything; an auth key sees its own scope's conversations; no
//     accepted key: none (401).
//   - no keys configured: numbers only, for everyone — unless
//     Options.TrustLoopback is set, when a loopback client sees
//     everything. A request that came through a forwarding proxy
//     (Forwarded, X-Forwarded-For, X-Real-Ip) is never taken as loopback:
//     a reverse proxy on the same host would otherwise hand everyone
//     behind it every conversation.
func (u *UI) viewerOf(r *http.Request) viewer {
	if len(u.admin) == 0 && len(u.callers) == 0 {
		if u.opts.TrustLoopback && isLoopback(r) {
			return viewer{access: accessAdmin}
		}
		return viewer{access: accessNumbers}
	}
	for _, key := range presentedKeys(r.Header) {
		sum := sha256.Sum256([]byte(key))
		if u.admin.has(sum) {
			return viewer{access: accessAdmin}
		}
		if u.callers.has(sum) {
			return viewer{access: accessCaller, scopes: u.scopesOf(key)}
		}
	}
	return viewer{access: accessNone}
}

// scopesOf is every scope a caller using key can have: the agent may send
// it in any of the headers the proxy accepts. A key never owns the scope
// of requests without credentials (which it would get if the proxy's
// scope headers left out the key's header).
func (u *UI) scopesOf(key string) []string {
	if u.opts.Scope == nil {
		return nil
	}
	anonymous := u.opts.Scope(http.Header{})
	var out []string
	for _, h := range proxy.KeyForms(key) {
		if s := u.opts.Scope(h); s != anonymous {
			out = append(out, s)
		}
	}
	return out
}

func isLoopback(r *http.Request) bool {
	for _, h := range []string{"Forwarded", "X-Forwarded-For", "X-Real-Ip"} {
		if r.Header.Get(h) != "" {
			return false
		}
	}
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
