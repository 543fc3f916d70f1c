package keepalive

import (
	"bytes"
	"testing"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"
)

// without deletes keys from a body.
func without(t *testing.T, body []byte, keys ...string) []byte {
	t.Helper()
	var err error
	for _, k := range keys {
		if body, err = sjson.DeleteBytes(body, k); err != nil {
			t.Fatal(err)
		}
	}
	return body
}

func TestPingBody(t *testing.T) {
	cases := []struct {
		name      string
		format    string
		reasoning bool
		body      string
		set       map[string]string // key -> its value in the ping (raw JSON); "" absent
		out       int
		err       bool
	}{
		{"messages", FormatMessages, false,
			`{"model":"claude-sonnet-4-5","max_tokens":32000,"stream":true,"system":[{"type":"text","text":"s","cache_control":{"type":"ephemeral"}}],"messages":[{"role":"user","content":"hi"}],"metadata":{"user_id":"u"}}`,
			map[string]string{"max_tokens": "1", "stream": "false"}, 1, false},
		{"messages thinking with a budget", FormatMessages, false,
			`{"model":"claude-sonnet-4-5","max_tokens":32000,"thinking":{"type":"enabled","budget_tokens":2048},"stream":true,"messages":[]}`,
			map[string]string{"max_tokens": "2049", "stream": "false", "thinking": `{"type":"enabled","budget_tokens":2048}`}, 2049, false},
		{"messages adaptive thinking keeps its limit", FormatMessages, false,
			`{"model":"claude-x","max_tokens":8000,"thinking":{"type":"adaptive"},"messages":[]}`,
			map[string]string{"max_tokens": "8000", "stream": ""}, 8000, false},
		{"chat", FormatChat, false,
			`{"model":"gpt-4.1","messages":[{"role":"user","content":"hi"}],"stream":true,"stream_options":{"include_usage":true},"max_tokens":4096}`,
			map[string]string{"max_tokens": "1", "stream": "false", "stream_options": ""}, 1, false},
		{"chat with max_completion_tokens", FormatChat, false,
			`{"model":"gpt-4.1","messages":[],"max_completion_tokens":4096}`,
			map[string]string{"max_completion_tokens": "1", "max_tokens": ""}, 1, false},
		{"chat, reasoning model without a limit", FormatChat, true,
			`{"model":"gpt-5","messages":[],"stream":true}`,
			map[string]string{"max_completion_tokens": "1", "max_tokens": "", "stream": "false"}, 1, false},
		{"responses", FormatResponses, false,
			`{"model":"gpt-5.5","input":[],"stream":true,"store":false,"prompt_cache_key":"k","reasoning":{"effort":"high"}}`,
			map[string]string{"max_output_tokens": "16", "stream": "false"}, 16, false},
		{"not JSON", FormatChat, false, `{"model":`, nil, 0, true},
		{"unknown format", "embeddings", false, `{"model":"x"}`, nil, 0, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ping, out, err := pingBody(tc.format, []byte(tc.body), tc.reasoning)
			if tc.err {
				if err == nil {
					t.Fatalf("no error; ping %s", ping)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if out != tc.out {
				t.Errorf("out %d, want %d", out, tc.out)
			}
			var keys []string
			for k, v := range tc.set {
				keys = append(keys, k)
				got := gjson.GetBytes(ping, k)
				if v == "" && got.Exists() {
					t.Errorf("%s = %s, want it absent", k, got.Raw)
				}
				if v != "" && got.Raw != v {
					t.Errorf("%s = %s, want %s", k, got.Raw, v)
				}
			}
			// Every other byte as forwarded.
			if a, b := without(t, ping, keys...), without(t, []byte(tc.body), keys...); !bytes.Equal(a, b) {
				t.Errorf("other fields changed:\n%s\n%s", a, b)
			}
		})
	}
}

func TestWorth(t *testing.T) {
	claude := Model{CacheRead: 0.1, CacheWrite: 1.25}
	gpt4o := Model{CacheRead: 0.5, CacheWrite: 1}
	cases := []struct {
		name   string
		m      Model
		prompt int
		out    int
		want   bool
	}{
		{"claude, one token", claude, 10000, 1, true},
		{"claude, a thinking budget dearer than the re-write", claude, 10000, 4096, false},
		{"claude, a thinking budget on a long prompt", claude, 100000, 4096, true},
		{"a read at half the price never pays", gpt4o, 100000, 1, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := worth(tc.m, tc.prompt, tc.out); got != tc.want {
				t.Errorf("worth = %v", got)
			}
		})
	}
}
