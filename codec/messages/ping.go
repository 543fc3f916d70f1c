package messages

import (
	"github.com/condense-proxy/condense-proxy/codec/internal/answer"
	"github.com/condense-proxy/condense-proxy/view"
)

var _ view.Pinger = (*Codec)(nil)

// Ping implements view.Pinger: max_tokens 1 (past the thinking budget
// when the request thinks), not streamed.
func (*Codec) Ping(body []byte, _ bool) ([]byte, int, error) {
	return answer.Ping(body, "max_tokens", 1, true)
}
