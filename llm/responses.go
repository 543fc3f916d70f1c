package llm

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
)

// ResponsesClient calls {BaseURL}/v1/responses for one non-streaming
// answer: the summaries of Responses requests are asked of the upstream in
// the format it was sent (a gateway or account that serves Codex may serve
// nothing else). Safe for concurrent use; it keeps neither context nor
// credentials.
type ResponsesClient struct {
	// BaseURL is the upstream base, as the proxy uses it.
	BaseURL *url.URL
	// HTTP sends the request. Nil: http.DefaultClient.
	HTTP *http.Client
}

// reasoningAllowance is added to a reasoning model's max_output_tokens:
// its hidden reasoning is billed as output and counts against the bound,
// which would otherwise leave no room for the summary itself.
const reasoningAllowance = 4096

// responsesReasoningModel reports whether model is a reasoning model,
// which takes no temperature (o-series, gpt-5 except its chat variants,
// codex models), with or without a provider prefix.
func responsesReasoningModel(model string) bool {
	m := strings.ToLower(model)
	if i := strings.LastIndexByte(m, '/'); i >= 0 {
		m = m[i+1:]
	}
	switch {
	case strings.HasPrefix(m, "o1"), strings.HasPrefix(m, "o3"), strings.HasPrefix(m, "o4"), strings.Contains(m, "codex"):
		return true
	case strings.HasPrefix(m, "gpt-5"):
		return !strings.Contains(m, "chat")
	}
	return false
}

// Complete returns the text of the answer's output messages. The request
// is stored nowhere (store:false); the system prompt goes as instructions,
// the text as one user message.
func (c *ResponsesClient) Complete(ctx context.Context, call Call) (string, error) {
	req := map[string]any{
		"model":             call.Model,
		"instructions":      call.System,
		"input":             []map[string]any{{"role": "user", "content": []map[string]string{{"type": "input_text", "text": call.User}}}},
		"max_output_tokens": call.MaxTokens,
		"store":             false,
		"stream":            false,
	}
	if call.Reasoning || responsesReasoningModel(call.Model) {
		req["max_output_tokens"] = call.MaxTokens + reasoningAllowance
	} else {
		req["temperature"] = 0
	}
	data, err := post(ctx, c.HTTP, endpoint(c.BaseURL, "responses"), call.payload(req), call.Credentials, nil)
	if err != nil {
		return "", err
	}
	var out struct {
		Status string `json:"status"`
		Error  *struct {
			Message string `json:"message"`
		} `json:"error"`
		Output []struct {
			Type    string `json:"type"`
			Content []struct {
				Type string `json:"type"`
				Text string `json:"text"`
			} `json:"content"`
		} `json:"output"`
	}
	if err := json.Unmarshal(data, &out); err != nil {
		return "", fmt.Errorf("decoding summarizer answer: %w", err)
	}
	if out.Status == "failed" || out.Error != nil {
		msg := out.Status
		if out.Error != nil {
			msg = out.Error.Message
		}
		return "", fmt.Errorf("summarizer response failed: %s", msg)
	}
	// An incomplete answer (max_output_tokens reached) still carries a
	// usable summary when it has text.
	var b strings.Builder
	for _, item := range out.Output {
		if item.Type != "message" {
			continue
		}
		for _, p := range item.Content {
			if p.Type == "output_text" {
				b.WriteString(p.Text)
			}
		}
	}
	text := strings.TrimSpace(b.String())
	if text == "" {
		return "", ErrEmpty
	}
	return text, nil
}
