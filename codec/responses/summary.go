package responses

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/condense-proxy/condense-proxy/view"
)

var _ view.SummaryAPI = (*Codec)(nil)

// SummaryReasoningRoom is added to a reasoning model's max_output_tokens
// in a summary request: its hidden reasoning is billed as output and
// counts against the bound, which would otherwise leave no room for the
// summary itself.
const SummaryReasoningRoom = 4096

// reasoningModel reports whether model is a reasoning model, which takes
// no temperature (o-series, gpt-5 except its chat variants, codex
// models), with or without a provider prefix.
func reasoningModel(model string) bool {
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

// SummaryPath implements view.SummaryAPI.
func (*Codec) SummaryPath(string) (string, []view.Header) { return "/v1/responses", nil }

// SummaryRequest implements view.SummaryAPI: stored nowhere (store
// false); the system prompt as instructions, the text as one user
// message; a reasoning model (as s says, or known by its name) gets
// SummaryReasoningRoom more output and no temperature, any other model
// temperature 0.
func (*Codec) SummaryRequest(s view.Summary) ([]byte, error) {
	req := map[string]any{
		"model":             s.Model,
		"instructions":      s.System,
		"input":             []map[string]any{{"role": "user", "content": []map[string]string{{"type": "input_text", "text": s.User}}}},
		"max_output_tokens": s.MaxTokens,
		"store":             false,
		"stream":            false,
	}
	if s.Reasoning || reasoningModel(s.Model) {
		req["max_output_tokens"] = s.MaxTokens + SummaryReasoningRoom
	} else {
		req["temperature"] = 0
	}
	return json.Marshal(req)
}

// SummaryText implements view.SummaryAPI: the text of the answer's
// output messages. An incomplete answer (max_output_tokens reached)
// still carries a usable summary when it has text.
func (*Codec) SummaryText(answer []byte) (string, error) {
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
	if err := json.Unmarshal(answer, &out); err != nil {
		return "", fmt.Errorf("decoding a response: %w", err)
	}
	if out.Status == "failed" || out.Error != nil {
		msg := out.Status
		if out.Error != nil {
			msg = out.Error.Message
		}
		return "", fmt.Errorf("the response failed: %s", msg)
	}
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
		return "", view.ErrNoText
	}
	return text, nil
}
