package chat

import (
	"github.com/tidwall/gjson"

	"github.com/condense-proxy/condense-proxy/codec/internal/answer"
	"github.com/condense-proxy/condense-proxy/view"
)

var _ view.Pinger = (*Codec)(nil)

// Ping implements view.Pinger: the bound at 1 — max_completion_tokens
// for a reasoning model or a request that uses it, max_tokens otherwise;
// past the thinking budget when the request thinks (Anthropic models
// through LiteLLM) —, not streamed, without stream_options.
func (*Codec) Ping(body []byte, reasoning bool) ([]byte, int, error) {
	bound := "max_tokens"
	if reasoning || gjson.GetBytes(body, "max_completion_tokens").Exists() {
		bound = "max_completion_tokens"
	}
	return answer.Ping(body, bound, 1, true)
}
