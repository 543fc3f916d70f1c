package llm

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
)

// MessagesClient calls {BaseURL}/v1/messages for one non-streaming answer:
// the summaries of Anthropic Messages requests are asked of the upstream
// in that format (an Anthropic upstream has no chat completions). The
// caller's headers go with it (x-api-key or Authorization,
// anthropic-version, anthropic-beta). Safe for concurrent use; it keeps
// neither context nor credentials.
type MessagesClient struct {
	// BaseURL is the upstream base, as the proxy uses it.
	BaseURL *url.URL
	// HTTP sends the request. Nil: http.DefaultClient.
	HTTP *http.Client
}

// anthropicVersion is sent when the caller's headers carry none.
const anthropicVersion = "2023-06-01"

// Complete returns the text blocks of the answer. The system prompt goes
// as system, the text as one user message; no thinking is asked for.
func (c *MessagesClient) Complete(ctx context.Context, call Call) (string, error) {
	req := map[string]any{
		"model":      call.Model,
		"system":     call.System,
		"messages":   []map[string]any{{"role": "user", "content": call.User}},
		"max_tokens": call.MaxTokens,
		"stream":     false,
	}
	// anthropic-version is sent when the caller's headers carry none.
	var extra http.Header
	if call.Credentials.Get("Anthropic-Version") == "" {
		extra = http.Header{"Anthropic-Version": {anthropicVersion}}
	}
	data, err := post(ctx, c.HTTP, endpoint(c.BaseURL, "messages"), call.payload(req), call.Credentials, extra)
	if err != nil {
		return "", err
	}
	var out struct {
		Type  string `json:"type"`
		Error *struct {
			Message string `json:"message"`
		} `json:"error"`
		Content []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
	}
	if err := json.Unmarshal(data, &out); err != nil {
		return "", fmt.Errorf("decoding summarizer answer: %w", err)
	}
	if out.Type == "error" || out.Error != nil {
		msg := "error"
		if out.Error != nil {
			msg = out.Error.Message
		}
		return "", fmt.Errorf("summarizer answered an error: %s", msg)
	}
	// An answer cut at max_tokens still carries a usable summary when it
	// has text.
	var b strings.Builder
	for _, p := range out.Content {
		if p.Type == "text" {
			b.WriteString(p.Text)
		}
	}
	text := strings.TrimSpace(b.String())
	if text == "" {
		return "", ErrEmpty
	}
	return text, nil
}
