package llm

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
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
	body, err := json.Marshal(req)
	if err != nil {
		return "", fmt.Errorf("encoding messages request: %w", err)
	}
	u := c.BaseURL.JoinPath("v1", "messages")
	if strings.HasSuffix(strings.TrimSuffix(c.BaseURL.Path, "/"), "/v1") {
		u = c.BaseURL.JoinPath("messages")
	}
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, u.String(), bytes.NewReader(body))
	if err != nil {
		return "", fmt.Errorf("building messages request: %w", err)
	}
	for k, vs := range call.Credentials {
		for _, v := range vs {
			hreq.Header.Add(k, v)
		}
	}
	if hreq.Header.Get("Anthropic-Version") == "" {
		hreq.Header.Set("Anthropic-Version", anthropicVersion)
	}
	hreq.Header.Set("Content-Type", "application/json")
	hreq.Header.Del("Accept-Encoding")
	hc := c.HTTP
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(hreq)
	if err != nil {
		return "", fmt.Errorf("calling summarizer: %w", err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
	if err != nil {
		return "", fmt.Errorf("reading summarizer answer: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("summarizer answered %d", resp.StatusCode)
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
