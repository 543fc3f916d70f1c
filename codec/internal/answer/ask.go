package answer

import (
	"fmt"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"
)

// Unstreamed returns body asked for one answer of at most n tokens, bound
// by the field named bound, and not streamed: "stream" false where it is
// set, "stream_options" dropped. Every other byte stays.
func Unstreamed(body []byte, bound string, n int) ([]byte, error) {
	var err error
	if gjson.GetBytes(body, "stream").Exists() {
		if body, err = sjson.SetBytes(body, "stream", false); err != nil {
			return nil, fmt.Errorf("setting stream: %w", err)
		}
	}
	if gjson.GetBytes(body, "stream_options").Exists() {
		if body, err = sjson.DeleteBytes(body, "stream_options"); err != nil {
			return nil, fmt.Errorf("dropping stream_options: %w", err)
		}
	}
	if body, err = sjson.SetBytes(body, bound, n); err != nil {
		return nil, fmt.Errorf("setting %s: %w", bound, err)
	}
	return body, nil
}

// ForcesAnswer reports whether tool_choice (raw JSON) forces a tool call
// rather than leaving the model free to answer in text: "required",
// "any", or a named tool.
func ForcesAnswer(toolChoice gjson.Result) bool {
	switch {
	case !toolChoice.Exists():
		return false
	case toolChoice.Type == gjson.String:
		return toolChoice.Str == "required" || toolChoice.Str == "any"
	default:
		t := toolChoice.Get("type").Str
		return t != "" && t != "auto" && t != "none"
	}
}
