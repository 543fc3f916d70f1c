package responses

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
	if path != "/v1/responses" || !slices.Equal(headers, nil) {
		t.Errorf("path %q, headers %v", path, headers)
	}
	for _, tc := range []struct {
		s    view.Summary
		want string
	}{
		{view.Summary{Model: "gpt-4o", System: "sys <&> \"q\"", User: "user\ntext é <b>", MaxTokens: 100, Reasoning: false},
			`{"input":[{"content":[{"text":"user\ntext é \u003cb\u003e","type":"input_text"}],"role":"user"}],"instructions":"sys \u003c\u0026\u003e \"q\"","max_output_tokens":100,"model":"gpt-4o","store":false,"stream":false,"temperature":0}`},
		{view.Summary{Model: "o3-mini", System: "s", User: "u", MaxTokens: 7, Reasoning: true},
			`{"input":[{"content":[{"text":"u","type":"input_text"}],"role":"user"}],"instructions":"s","max_output_tokens":4103,"model":"o3-mini","store":false,"stream":false}`},
		{view.Summary{Model: "gpt-5-codex", System: "s", User: "u", MaxTokens: 7, Reasoning: false},
			`{"input":[{"content":[{"text":"u","type":"input_text"}],"role":"user"}],"instructions":"s","max_output_tokens":4103,"model":"gpt-5-codex","store":false,"stream":false}`},
		{view.Summary{Model: "claude", System: "", User: "", MaxTokens: 0, Reasoning: false},
			`{"input":[{"content":[{"text":"","type":"input_text"}],"role":"user"}],"instructions":"","max_output_tokens":0,"model":"claude","store":false,"stream":false,"temperature":0}`},
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
