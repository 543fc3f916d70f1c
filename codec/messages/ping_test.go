package messages

import (
	"testing"

	"github.com/condense-proxy/condense-proxy/codec/internal/codectest"
)

func TestPing(t *testing.T) {
	codectest.CheckPings(t, New(nil), []codectest.PingCase{
		{Name: "messages", Reasoning: false,
			Body: `{"model":"claude-sonnet-4-5","max_tokens":32000,"stream":true,"system":[{"type":"text","text":"s","cache_control":{"type":"ephemeral"}}],"messages":[{"role":"user","content":"hi"}],"metadata":{"user_id":"u"}}`,
			Set:  map[string]string{"max_tokens": "1", "stream": "false"}, Out: 1, Err: false},
		{Name: "thinking with a budget", Reasoning: false,
			Body: `{"model":"claude-sonnet-4-5","max_tokens":32000,"thinking":{"type":"enabled","budget_tokens":2048},"stream":true,"messages":[]}`,
			Set:  map[string]string{"max_tokens": "2049", "stream": "false", "thinking": `{"type":"enabled","budget_tokens":2048}`}, Out: 2049, Err: false},
		{Name: "adaptive thinking keeps its limit", Reasoning: false,
			Body: `{"model":"claude-x","max_tokens":8000,"thinking":{"type":"adaptive"},"messages":[]}`,
			Set:  map[string]string{"max_tokens": "8000", "stream": ""}, Out: 8000, Err: false},
		{Name: "thinking without a budget", Reasoning: false, Body: `{"model":"claude-x","max_tokens":8000,"thinking":{"type":"enabled"},"messages":[]}`, Set: nil, Out: 0, Err: true},
		{Name: "not JSON", Reasoning: false, Body: `{"model":`, Set: nil, Out: 0, Err: true},
		{Name: "not an object", Reasoning: false, Body: `[1]`, Set: nil, Out: 0, Err: true},
	})
}
