package proxy

import (
	"crypto/sha256"
	"crypto/subtle"
	"net/http"
	"strings"
)

// requireKey answers 401 before anything else happens when the request
// carries none of the accepted inbound keys (Authorization: Bearer, or
// x-api-key / api-key); with no keys it lets everything through. The
// router applies it to every route but the open ones (health, metrics,
// the live page, which checks keys itself). The key is compared in
// constant time, by hash, and never logged.
func requireKey(keys []string) func(http.Handler) http.Handler {
	sums := make([][32]byte, 0, len(keys))
	for _, k := range keys {
		sums = append(sums, sha256.Sum256([]byte(k)))
	}
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if len(sums) == 0 {
				next.ServeHTTP(w, r)
				return
			}
			for _, p := range PresentedKeys(r.Header) {
				sum := sha256.Sum256([]byte(p))
				for _, s := range sums {
					if subtle.ConstantTimeCompare(sum[:], s[:]) == 1 {
						next.ServeHTTP(w, r)
						return
					}
				}
			}
			info(r.Context()).note = "no accepted inbound key"
			writeError(w, r, http.StatusUnauthorized, "invalid_request_error", "condense-proxy: missing or unknown API key")
		})
	}
}

// readOnly serves GET and HEAD with h and answers 405 (Allow: GET, HEAD)
// to every other method: an open route's own answer, never forwarded.
func readOnly(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet || r.Method == http.MethodHead {
			h.ServeHTTP(w, r)
			return
		}
		info(r.Context()).note = "method not allowed on an open route"
		w.Header().Set("Allow", "GET, HEAD")
		writeError(w, r, http.StatusMethodNotAllowed, "invalid_request_error", "condense-proxy: "+r.Method+" not allowed here (GET, HEAD)")
	})
}

// keyHeaders carry an inbound key as they are, besides Authorization's
// Bearer token.
var keyHeaders = []string{"X-Api-Key", "Api-Key"}

// KeyForms returns the header sets in which a request can present key
// (what PresentedKeys accepts): Authorization: Bearer, x-api-key, api-key.
func KeyForms(key string) []http.Header {
	out := []http.Header{{"Authorization": {"Bearer " + key}}}
	for _, k := range keyHeaders {
		out = append(out, http.Header{k: {key}})
	}
	return out
}

// PresentedKeys returns the inbound keys a request presents, non-empty:
// the token of Authorization's Bearer scheme (the scheme name matched
// case-insensitively, as RFC 9110 has it, and any spaces or tabs around
// the token), then x-api-key and api-key.
func PresentedKeys(h http.Header) []string {
	var out []string
	if f := strings.Fields(h.Get("Authorization")); len(f) == 2 && strings.EqualFold(f[0], "Bearer") {
		out = append(out, f[1])
	}
	for _, k := range keyHeaders {
		if v := h.Get(k); v != "" {
			out = append(out, v)
		}
	}
	return out
}

// isUIPath reports whether path is the live page's.
func isUIPath(path string) bool {
	return path == "/ui" || strings.HasPrefix(path, "/ui/")
}
