package chat

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/condense-proxy/condense-proxy/view"
)

var _ view.SummaryAPI = (*Codec)(nil)

// SummaryPath implements view.SummaryAPI.
func (*Codec) SummaryPath(string) (string, []view.Header) { return "/v1/chat/completions", nil }

// SummaryRequest implements view.SummaryAPI: the system prompt and the
// text as two messages; a reasoning model's bound is
// max_completion_tokens with view.ReasoningRoom added for its reasoning,
// and it gets no temperature (it takes only the default); any other
// model's is max_tokens, at temperature 0.
func (*Codec) SummaryRequest(s view.Summary) ([]byte, error) {
	payload := map[string]any{
		"model":  s.Model,
		"stream": false,
		"messages": []map[string]string{
			{"role": "system", "content": s.System},
			{"role": "user", "content": s.User},
		},
	}
	if s.Reasoning {
		payload["max_completion_tokens"] = s.MaxTokens + view.ReasoningRoom
	} else {
		payload["max_tokens"] = s.MaxTokens
		payload["temperature"] = 0
	}
	return json.Marshal(payload)
}

// SummaryText implements view.SummaryAPI: the first choice's message.
func (*Codec) SummaryText(answer []byte) (string, error) {
	var out struct {
		Choices []struct {
			Message struct {
				Content string `json:"content"`
			} `json:"message"`
		} `json:"choices"`
	}
	if err := json.Unmarshal(answer, &out); err != nil {
		return "", fmt.Errorf("decoding a chat completion: %w", err)
	}
	if len(out.Choices) == 0 || strings.TrimSpace(out.Choices[0].Message.Content) == "" {
		return "", view.ErrNoText
	}
	return strings.TrimSpace(out.Choices[0].Message.Content), nil
}
