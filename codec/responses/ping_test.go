package responses

import (
	"testing"

	"github.com/condense-proxy/condense-proxy/codec/internal/codectest"
)

func TestPing(t *testing.T) {
	codectest.CheckPings(t, New(nil), []codectest.PingCase{
		{Name: "responses", Reasoning: false,
			Body: `{"model":"gpt-5.5","input":[],"stream":true,"store":false,"prompt_cache_key":"k","reasoning":{"effort":"high"}}`,
			Set:  map[string]string{"max_output_tokens": "16", "stream": "false"}, Out: 16, Err: false},
		{Name: "not JSON", Reasoning: false, Body: `{"model":`, Set: nil, Out: 0, Err: true},
	})
}
