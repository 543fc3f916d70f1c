package chat

import (
	"testing"

	"github.com/condense-proxy/condense-proxy/codec/internal/codectest"
)

func TestPing(t *testing.T) {
	codectest.CheckPings(t, New(nil), []codectest.PingCase{
		{Name: "chat", Reasoning: false,
			Body: `{"model":"gpt-4.1","messages":[{"role":"user","content":"hi"}],"stream":true,"stream_options":{"include_usage":true},"max_tokens":4096}`,
			Set:  map[string]string{"max_tokens": "1", "stream": "false", "stream_options": ""}, Out: 1, Err: false},
		{Name: "with max_completion_tokens", Reasoning: false,
			Body: `{"model":"gpt-4.1","messages":[],"max_completion_tokens":4096}`,
			Set:  map[string]string{"max_completion_tokens": "1", "max_tokens": ""}, Out: 1, Err: false},
		{Name: "a reasoning model without a limit", Reasoning: true,
			Body: `{"model":"gpt-5","messages":[],"stream":true}`,
			Set:  map[string]string{"max_completion_tokens": "1", "max_tokens": "", "stream": "false"}, Out: 1, Err: false},
		{Name: "thinking through LiteLLM", Reasoning: false,
			Body: `{"model":"claude-sonnet-4-5","messages":[],"max_tokens":16000,"thinking":{"type":"enabled","budget_tokens":1024}}`,
			Set:  map[string]string{"max_tokens": "1025"}, Out: 1025, Err: false},
		{Name: "not JSON", Reasoning: false, Body: `{"model":`, Set: nil, Out: 0, Err: true},
	})
}
