package proxy

import (
	"net/http"
	"net/url"
	"strings"
)

// maxUnescape bounds how many layers of percent-encoding a path is
// checked through (an upstream, or a proxy before it, may decode again).
const maxUnescape = 3

// refuseDotSegments answers 400 to a request whose path has a "." or ".."
// segment, however it is written — literally, percent-encoded (%2e%2e),
// between encoded slashes (%2f) or backslashes, encoded more than once —
// so no request path can climb out of the upstream's base path: the path
// is appended to that base, and the upstream (or anything between) would
// resolve the dots. Agents and SDKs never send such paths.
func refuseDotSegments(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if hasDotSegment(r.URL) {
			info(r.Context()).note = "request path has a dot segment"
			writeError(w, r, http.StatusBadRequest, "invalid_request_error", "condense-proxy: request path must not contain . or .. segments")
			return
		}
		next.ServeHTTP(w, r)
	})
}

// hasDotSegment reports whether u's path, decoded up to maxUnescape times,
// has a "." or ".." segment between slashes or backslashes.
func hasDotSegment(u *url.URL) bool {
	p := u.EscapedPath()
	for range maxUnescape + 1 {
		for _, seg := range strings.FieldsFunc(p, func(c rune) bool { return c == '/' || c == '\\' }) {
			if seg == "." || seg == ".." {
				return true
			}
		}
		q, err := url.PathUnescape(p)
		if err != nil || q == p {
			return false
		}
		p = q
	}
	return false
}
