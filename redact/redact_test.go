package redact

import (
	"strings"
	"testing"
)

func TestSecrets(t *testing.T) {
	for _, tc := range []struct{ in, secret string }{
		{`{"error":{"message":"Incorrect API key provided: sk-proj-abcdefgh12345678"}}`, "sk-proj-abcdefgh12345678"},
		{"invalid x-api-key sk-ant-api03-AbCdEf_123456789", "sk-ant-api03-AbCdEf_123456789"},
		{"Authorization: Bearer abcdef0123456789abcdef", "abcdef0123456789abcdef"},
		{"bad key AIzaSyA1234567890abcdefghijklmnop", "AIzaSyA1234567890abcdefghijklmnop"},
		{`api_key="0123456789abcdef0123456789abcdef" rejected`, "0123456789abcdef0123456789abcdef"},
		{"token eyJhbGciOiJIUzI1.eyJzdWIiOiIxMjM0.SflKxwRJSMeKKF2QT4", "eyJhbGciOiJIUzI1.eyJzdWIiOiIxMjM0.SflKxwRJSMeKKF2QT4"},
		{"ghp_abcdefghijklmnop1234 leaked", "ghp_abcdefghijklmnop1234"},
	} {
		got := Secrets(tc.in)
		if strings.Contains(got, tc.secret) || !strings.Contains(got, Mark) {
			t.Errorf("Secrets(%q) = %q", tc.in, got)
		}
	}
	// The caller's own key, whatever its shape.
	if got := Secrets("echo: my-team-key-0001 refused", "my-team-key-0001"); strings.Contains(got, "my-team-key-0001") {
		t.Errorf("known key kept: %q", got)
	}
	// Ordinary text stays.
	for _, s := range []string{"summarizer answered 429: rate limited", "the key lines of the output", "task: fix the tokenizer"} {
		if got := Secrets(s); got != s {
			t.Errorf("Secrets(%q) = %q: changed", s, got)
		}
	}
}
