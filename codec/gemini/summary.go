package gemini

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/condense-proxy/condense-proxy/view"
)

var _ view.SummaryAPI = (*Codec)(nil)

// SummaryPath implements view.SummaryAPI: the model's generateContent,
// not streamed.
func (*Codec) SummaryPath(model string) (string, []view.Header) {
	return "/v1beta/models/" + url.PathEscape(strings.TrimPrefix(model, "models/")) + ":generateContent", nil
}

// SummaryRequest implements view.SummaryAPI: the system prompt as
// systemInstruction, the text as one user content, the bound as
// maxOutputTokens (with room for thinking for a model that reasons).
func (*Codec) SummaryRequest(s view.Summary) ([]byte, error) {
	bound := s.MaxTokens
	if s.Reasoning {
		bound += view.ReasoningRoom
	}
	return json.Marshal(map[string]any{
		"systemInstruction": map[string]any{"parts": []map[string]any{{"text": s.System}}},
		"contents":          []map[string]any{{"role": "user", "parts": []map[string]any{{"text": s.User}}}},
		"generationConfig":  map[string]any{"maxOutputTokens": bound},
	})
}

// SummaryText implements view.SummaryAPI: the first candidate's text
// parts, thoughts left out.
func (*Codec) SummaryText(answer []byte) (string, error) {
	if !gjson.ValidBytes(answer) || !gjson.ParseBytes(answer).IsObject() {
		return "", fmt.Errorf("decoding a Gemini answer: not a JSON object")
	}
	g := gjson.ParseBytes(answer)
	if e := g.Get("error"); e.Exists() {
		return "", fmt.Errorf("answered an error: %s", e.Get("message").String())
	}
	var b strings.Builder
	g.Get("candidates.0.content.parts").ForEach(func(_, p gjson.Result) bool {
		if !p.Get("thought").Bool() {
			b.WriteString(p.Get("text").String())
		}
		return true
	})
	text := strings.TrimSpace(b.String())
	if text == "" {
		return "", view.ErrNoText
	}
	return text, nil
}
