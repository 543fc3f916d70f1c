package proxy

import (
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/condense-proxy/condense-proxy/view"
)

// Gemini's model methods. The model is in the path
// (/v1beta/models/{model}:generateContent): the route hands it to the
// codec (view.PathModel), and the codec it gets back is the request's —
// the one that scans it, shapes its errors and writes its pings.
// countTokens goes through the same pipeline without side effects and is
// forwarded to the upstream's countTokens, like Messages' count_tokens.
// Every other path under /v1beta passes through, its errors in Google's
// shape. The methods and their paths are the codec's (gemini.Methods,
// gemini.Patterns).

// gemini returns the handler of a Gemini model method's route.
func (p *Proxy) gemini(route string, codec view.Codec, countOnly bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		c := codec
		if pm, ok := codec.(view.PathModel); ok {
			c = pm.WithModel(chi.URLParam(r, "model"))
		}
		ri := info(r.Context())
		ri.codec = c
		// The caller may give its key as ?key= instead of x-goog-api-key:
		// it scopes the caller (and the summarizer's calls carry it) as
		// the header would. It is forwarded as received, never logged.
		ri.queryKey = r.URL.Query().Get("key")
		p.condense(w, r, route, c, countOnly)
	}
}

// callerHeader returns the headers that scope r's caller: r's own, and
// the key of a ?key= query (as x-goog-api-key) when the route takes one
// and the header does not carry it.
func callerHeader(r *http.Request) http.Header {
	ri := info(r.Context())
	if ri.queryKey == "" || r.Header.Get("X-Goog-Api-Key") != "" {
		return r.Header
	}
	h := r.Header.Clone()
	h.Set("X-Goog-Api-Key", ri.queryKey)
	return h
}
