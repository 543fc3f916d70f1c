package responses

import (
	"github.com/condense-proxy/condense-proxy/codec/internal/answer"
	"github.com/condense-proxy/condense-proxy/view"
)

var _ view.Pinger = (*Codec)(nil)

// minOutput is the least max_output_tokens the API accepts.
const minOutput = 16

// Ping implements view.Pinger: max_output_tokens at the API's minimum,
// not streamed.
func (*Codec) Ping(body []byte, _ bool) ([]byte, int, error) {
	return answer.Ping(body, "max_output_tokens", minOutput, false)
}
