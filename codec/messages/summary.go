package messages

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/condense-proxy/condense-proxy/view"
)

var _ view.SummaryAPI = (*Codec)(nil)

// APIVersion is the anthropic-version a summary request carries when the
// caller's headers have none.
const APIVersion = "2023-06-01"

// SummaryPath implements view.SummaryAPI.
func (*Codec) SummaryPath(string) (string, []view.Header) {
	return "/v1/messages", []view.Header{{Name: "Anthropic-Version", Value: APIVersion}}
}

// SummaryRequest implements view.SummaryAPI: the system prompt as
// system, the text as one user message; no thinking is asked for.
func (*Codec) SummaryRequest(s view.Summary) ([]byte, error) {
	return json.Marshal(map[string]any{
		"model":      s.Model,
		"system":     s.System,
		"messages":   []map[string]any{{"role": "user", "content": s.User}},
		"max_tokens": s.MaxTokens,
		"stream":     false,
	})
}

// SummaryText implements view.SummaryAPI: the answer's text blocks.
func (*Codec) SummaryText(answer []byte) (string, error) {
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
	if err := json.Unmarshal(answer, &out); err != nil {
		return "", fmt.Errorf("decoding a Messages answer: %w", err)
	}
	if out.Type == "error" || out.Error != nil {
		msg := "error"
		if out.Error != nil {
			msg = out.Error.Message
		}
		return "", fmt.Errorf("answered an error: %s", msg)
	}
	var b strings.Builder
	for _, p := range out.Content {
		if p.Type == "text" {
			b.WriteString(p.Text)
		}
	}
	text := strings.TrimSpace(b.String())
	if text == "" {
		return "", view.ErrNoText
	}
	return text, nil
}
