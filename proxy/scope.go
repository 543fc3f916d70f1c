package proxy

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"hash"
	"io"
	"net/http"
	"strings"
)

// CredentialHeaders are the request headers that carry a caller's
// credentials: the default of the scope headers (config scope_headers),
// and what the summarizer's calls carry on the caller's behalf. The one
// list of them.
var CredentialHeaders = []string{"Authorization", "X-Api-Key", "Api-Key", "X-Litellm-Api-Key", "X-Goog-Api-Key"}

// callHeaders are copied onto the summarizer's calls besides the
// credentials: the account a call is billed to and the API version and
// features a Messages call needs.
var callHeaders = []string{"OpenAI-Organization", "OpenAI-Project", "Anthropic-Version", "Anthropic-Beta"}

// Scoper maps a request's credentials to the caller's scope: an
// HMAC-SHA256, under a server secret, of the values of the scope headers.
// Two requests have the same scope when they carry the same values in
// those headers, so callers sharing one key (or sending none) share one
// scope. Without the secret a scope cannot be linked to a key, even by
// trying candidate keys.
//
// A Scoper is immutable and safe for concurrent use.
type Scoper struct {
	secret  []byte
	headers []string // canonical names
	copied  []string // copied onto summarizer calls
}

// NewScoper returns a Scoper keyed by secret over headers (nil or empty:
// CredentialHeaders). An empty secret is replaced by a random one, so
// scopes then change whenever a new Scoper is made (a restart).
func NewScoper(secret []byte, headers []string) *Scoper {
	if len(secret) == 0 {
		secret = make([]byte, 32)
		rand.Read(secret)
	}
	if len(headers) == 0 {
		headers = CredentialHeaders
	}
	s := &Scoper{secret: append([]byte(nil), secret...)}
	seen := map[string]bool{}
	add := func(dst []string, h string) []string {
		k := http.CanonicalHeaderKey(strings.TrimSpace(h))
		if k == "" || seen[k] {
			return dst
		}
		seen[k] = true
		return append(dst, k)
	}
	for _, h := range headers {
		s.headers = add(s.headers, h)
	}
	s.copied = append([]string(nil), s.headers...)
	for _, h := range append(append([]string(nil), CredentialHeaders...), callHeaders...) {
		s.copied = add(s.copied, h)
	}
	return s
}

// Scope returns the caller scope of a request's headers (32 hex digits).
// The credentials themselves are never kept. An Authorization value is
// taken in its canonical form (canonicalAuthorization), so the spellings
// of one key that the proxy's inbound auth accepts make one scope.
func (s *Scoper) Scope(h http.Header) string {
	mac := hmac.New(sha256.New, s.secret)
	for _, k := range s.headers {
		vs := h.Values(k)
		writeField(mac, k)
		mac.Write(binary.BigEndian.AppendUint64(nil, uint64(len(vs))))
		for _, v := range vs {
			if k == "Authorization" {
				v = canonicalAuthorization(v)
			}
			writeField(mac, v)
		}
	}
	return hex.EncodeToString(mac.Sum(nil)[:16])
}

// canonicalAuthorization is an Authorization value as its scope sees it:
// the scheme's name in any case and the spaces around the credentials do
// not matter (RFC 9110), so "bearer  k" is "Bearer k". Other schemes keep
// their name as sent, with one space before the credentials.
func canonicalAuthorization(v string) string {
	f := strings.Fields(v)
	if len(f) != 2 {
		return strings.TrimSpace(v)
	}
	if strings.EqualFold(f[0], "Bearer") {
		f[0] = "Bearer"
	}
	return f[0] + " " + f[1]
}

// writeField writes s length-prefixed: with the value counts, no two
// different header sets feed the MAC the same bytes.
func writeField(h hash.Hash, s string) {
	h.Write(binary.BigEndian.AppendUint64(nil, uint64(len(s))))
	io.WriteString(h, s)
}

// Credentials returns the headers of h the summarizer's calls carry: the
// scope headers, every credential header, and the account and API-version
// headers (OpenAI-Organization, OpenAI-Project, anthropic-version,
// anthropic-beta), so a summary is paid for by the caller whose
// conversation it is and is asked the way the caller asks.
func (s *Scoper) Credentials(h http.Header) http.Header {
	out := http.Header{}
	for _, k := range s.copied {
		if v := h.Values(k); len(v) > 0 {
			out[k] = append([]string(nil), v...)
		}
	}
	return out
}
