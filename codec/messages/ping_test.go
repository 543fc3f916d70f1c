package messages

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
		{"messages", false,
			`{"model":"claude-sonnet-4-5","max_tokens":32000,"stream":true,"system":[{"type":"text","text":"s","cache_control":{"type":"ephemeral"}}],"messages":[{"role":"user","content":"hi"}],"metadata":{"user_id":"u"}}`,
			map[string]string{"max_tokens": "1", "stream": "false"}, 1, false},
		{"thinking with a budget", false,
			`{"model":"claude-sonnet-4-5","max_tokens":32000,"thinking":{"type":"enabled","budget_tokens":2048},"stream":true,"messages":[]}`,
			map[string]string{"max_tokens": "2049", "stream": "false", "thinking": `{"type":"enabled","budget_tokens":2048}`}, 2049, false},
		{"adaptive thinking keeps its limit", false,
			`{"model":"claude-x","max_tokens":8000,"thinking":{"type":"adaptive"},"messages":[]}`,
			map[string]string{"max_tokens": "8000", "stream": ""}, 8000, false},
		{"thinking without a budget", false, `{"model":"claude-x","max_tokens":8000,"thinking":{"type":"enabled"},"messages":[]}`, nil, 0, true},
		{"not JSON", false, `{"model":`, nil, 0, true},
		{"not an object", false, `[1]`, nil, 0, true},
	})
}
