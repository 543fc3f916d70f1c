package messages

import (
	"errors"
	"slices"
	"testing"

	"github.com/condense-proxy/condense-proxy/view"
)

// TestSummaryRequest: the bytes of a summary request, as the summarizer
// has always sent them (keys sorted, HTML escaped, as encoding/json
// writes a map).
func TestSummaryRequest(t *testing.T) {
	c := New(nil)
	path, headers := c.SummaryPath("m")
	if path != "/v1/messages" || !slices.Equal(headers, []view.Header{{Name: "Anthropic-Version", Value: "2023-06-01"}}) {
		t.Errorf("path %q, headers %v", path, headers)
	}
	for _, tc := range []struct {
		s    view.Summary
		want string
	}{
		{view.Summary{Model: "gpt-4o", System: "sys <&> \"q\"", User: "user\ntext é <b>", MaxTokens: 100, Reasoning: false},
			`{"max_tokens":100,"messages":[{"content":"user\ntext é \u003cb\u003e","role":"user"}],"model":"gpt-4o","stream":false,"system":"sys \u003c\u0026\u003e \"q\""}`},
		{view.Summary{Model: "o3-mini", System: "s", User: "u", MaxTokens: 7, Reasoning: true},
			`{"max_tokens":7,"messages":[{"content":"u","role":"user"}],"model":"o3-mini","stream":false,"system":"s"}`},
		{view.Summary{Model: "gpt-5-codex", System: "s", User: "u", MaxTokens: 7, Reasoning: false},
			`{"max_tokens":7,"messages":[{"content":"u","role":"user"}],"model":"gpt-5-codex","stream":false,"system":"s"}`},
		{view.Summary{Model: "claude", System: "", User: "", MaxTokens: 0, Reasoning: false},
			`{"max_tokens":0,"messages":[{"content":"","role":"user"}],"model":"claude","stream":false,"system":""}`},
	} {
		got, err := c.SummaryRequest(tc.s)
		if err != nil || string(got) != tc.want {
			t.Errorf("%+v:\n got %s (%v)\nwant %s", tc.s, got, err, tc.want)
		}
	}
	if _, err := c.SummaryText([]byte(`{}`)); !errors.Is(err, view.ErrNoText) {
		t.Errorf("an answer without text: %v", err)
	}
	if _, err := c.SummaryText([]byte(`<html>`)); err == nil || errors.Is(err, view.ErrNoText) {
		t.Errorf("not JSON: %v", err)
	}
}
