package fakeupstream

import (
	"fmt"
	"strings"

	"github.com/tidwall/gjson"
)

// reasoningPrefixes are the model families OpenAI runs as reasoning
// models: they refuse max_tokens and any temperature but the default.
var reasoningPrefixes = []string{"o1", "o3", "o4", "gpt-5"}

// IsReasoningModel reports whether OpenAI treats model (provider prefix
// stripped) as a reasoning model.
func IsReasoningModel(model string) bool {
	m := strings.ToLower(model[strings.LastIndexByte(model, '/')+1:])
	for _, p := range reasoningPrefixes {
		if strings.HasPrefix(m, p) && !strings.HasPrefix(m, "gpt-5-chat") {
			return true
		}
	}
	return false
}

// CheckParams applies OpenAI's parameter rules for reasoning models to a
// chat-completions body, with OpenAI's own messages: max_tokens is
// refused ("Use 'max_completion_tokens' instead"), and so is a
// temperature other than 1.
func CheckParams(body []byte) error {
	if !IsReasoningModel(gjson.GetBytes(body, "model").String()) {
		return nil
	}
	if gjson.GetBytes(body, "max_tokens").Exists() {
		return fmt.Errorf("Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead.")
	}
	if t := gjson.GetBytes(body, "temperature"); t.Exists() && t.Float() != 1 {
		return fmt.Errorf("Unsupported value: 'temperature' does not support %s with this model. Only the default (1) value is supported.", t.Raw)
	}
	return nil
}
