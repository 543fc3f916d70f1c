// Package redact removes secrets from text that came from elsewhere — an
// upstream's error message, which may echo the key it was sent — before
// that text is logged, kept in a report or echoed in a header.
package redact

import (
	"regexp"
	"strings"
)

// Mark is what stands where a secret was.
const Mark = "[redacted]"

// keyShaped matches what API keys and bearer tokens look like: provider
// key prefixes (sk-…, sk-ant-…, sk-proj-…, AIza…, xai-…, gsk_…, hf_…,
// ghp_…), a Bearer token, JWTs, and a long opaque run after a word that
// names a key or token.
var keyShaped = regexp.MustCompile(`(?i)` +
	`\b(?:sk|rk|pk)-[a-z0-9_\-]{8,}` +
	`|\bAIza[0-9a-z_\-]{20,}` +
	`|\b(?:xai|gsk|hf|ghp|gho|github_pat|glpat)[-_][a-z0-9_\-]{12,}` +
	`|\bbearer\s+[a-z0-9._~+/=\-]{8,}` +
	`|\beyJ[a-z0-9_\-]{8,}\.[a-z0-9_\-]{8,}\.[a-z0-9_\-]{8,}` +
	`|\b(?:api[-_ ]?key|key|token|secret|password|authorization)\b["']?\s*[:=]\s*["']?[a-z0-9._~+/\-]{16,}`)

// Secrets returns s with every key-shaped string, and every one of known
// (the caller's own credentials, 8 bytes or longer), replaced by Mark.
func Secrets(s string, known ...string) string {
	for _, k := range known {
		if len(k) >= 8 {
			s = strings.ReplaceAll(s, k, Mark)
		}
	}
	return keyShaped.ReplaceAllString(s, Mark)
}
