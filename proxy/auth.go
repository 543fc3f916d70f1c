package proxy

import (
	"crypto/sha256"
	"crypto/subtle"
	"net/http"
	"strings"
)

// requireKey answers 401 before anything else happens when the request
// carries none of the accepted inbound keys (Authorization: Bearer, or
// x-api-key / api-key). Health and metrics endpoints stay open. The key
// is compared in constant time, by hash, and never logged.
func requireKey(keys []string) func(http.Handler) http.Handler {
	sums := make([][32]byte, 0, len(keys))
	for _, k := range keys {
		sums = append(sums, sha256.Sum256([]byte(k)))
	}
	open := map[string]bool{"/healthz": true, "/readyz": true, "/metrics": true}
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if len(sums) == 0 || open[r.URL.Path] {
				next.ServeHTTP(w, r)
				return
			}
			var presented []string
			if a := r.Header.Get("Authorization"); a != "" {
				if tok, ok := strings.CutPrefix(a, "Bearer "); ok {
					presented = append(presented, strings.TrimSpace(tok))
				}
			}
			presented = append(presented, r.Header.Get("X-Api-Key"), r.Header.Get("Api-Key"))
			for _, p := range presented {
				if p == "" {
					continue
				}
				sum := sha256.Sum256([]byte(p))
				for _, s := range sums {
					if subtle.ConstantTimeCompare(sum[:], s[:]) == 1 {
						next.ServeHTTP(w, r)
						return
					}
				}
			}
			info(r.Context()).note = "no accepted inbound key"
			writeError(w, http.StatusUnauthorized, "invalid_request_error", "condense-proxy: missing or unknown API key")
		})
	}
}
