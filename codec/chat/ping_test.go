package chat

import (
	"bytes"
	"errors"
	"testing"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	"github.com/condense-proxy/condense-proxy/view"
)

// pingCase is a body, what its ping sets (a key's raw JSON; "" absent)
// and the output it may cost.
type pingCase struct {
	name      string
	reasoning bool
	body      string
	set       map[string]string
	out       int
	err       bool
}

// checkPings: each ping sets what it says, and every other byte is as
// forwarded.
func checkPings(t *testing.T, c view.Pinger, cases []pingCase) {
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ping, out, err := c.Ping([]byte(tc.body), tc.reasoning)
			if tc.err {
				if !errors.Is(err, view.ErrNoPing) {
					t.Fatalf("%v; ping %s", err, ping)
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
			without := func(body []byte) []byte {
				for _, k := range keys {
					var err error
					if body, err = sjson.DeleteBytes(body, k); err != nil {
						t.Fatal(err)
					}
				}
				return body
			}
			if a, b := without(ping), without([]byte(tc.body)); !bytes.Equal(a, b) {
				t.Errorf("other fields changed:\n%s\n%s", a, b)
			}
		})
	}
}

func TestPing(t *testing.T) {
	checkPings(t, New(nil), []pingCase{
		{"chat", false,
			`{"model":"gpt-4.1","messages":[{"role":"user","content":"hi"}],"stream":true,"stream_options":{"include_usage":true},"max_tokens":4096}`,
			map[string]string{"max_tokens": "1", "stream": "false", "stream_options": ""}, 1, false},
		{"with max_completion_tokens", false,
			`{"model":"gpt-4.1","messages":[],"max_completion_tokens":4096}`,
			map[string]string{"max_completion_tokens": "1", "max_tokens": ""}, 1, false},
		{"a reasoning model without a limit", true,
			`{"model":"gpt-5","messages":[],"stream":true}`,
			map[string]string{"max_completion_tokens": "1", "max_tokens": "", "stream": "false"}, 1, false},
		{"thinking through LiteLLM", false,
			`{"model":"claude-sonnet-4-5","messages":[],"max_tokens":16000,"thinking":{"type":"enabled","budget_tokens":1024}}`,
			map[string]string{"max_tokens": "1025"}, 1025, false},
		{"not JSON", false, `{"model":`, nil, 0, true},
	})
}
