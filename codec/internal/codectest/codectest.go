// Package codectest holds the checks every codec's tests share: a ping
// changes only what it says, and an answer read in pieces of any size
// gives the same outcome within the reader's bounds. Imported by tests
// only.
package codectest

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	"github.com/condense-proxy/condense-proxy/codec/internal/answer"
	"github.com/condense-proxy/condense-proxy/view"
)

// PingCase is a body, what its ping sets (a key's raw JSON; "" absent)
// and the output it may cost; Err: the body cannot be pinged.
type PingCase struct {
	Name      string
	Reasoning bool
	Body      string
	Set       map[string]string
	Out       int
	Err       bool
}

// CheckPings: each ping sets what it says, and every other byte is as
// forwarded.
func CheckPings(t *testing.T, c view.Pinger, cases []PingCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.Name, func(t *testing.T) {
			ping, out, err := c.Ping([]byte(tc.Body), tc.Reasoning)
			if tc.Err {
				if !errors.Is(err, view.ErrNoPing) {
					t.Fatalf("%v; ping %s", err, ping)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if out != tc.Out {
				t.Errorf("out %d, want %d", out, tc.Out)
			}
			var keys []string
			for k, v := range tc.Set {
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
			if a, b := without(ping), without([]byte(tc.Body)); !bytes.Equal(a, b) {
				t.Errorf("other fields changed:\n%s\n%s", a, b)
			}
		})
	}
}

// SSE frames events as server-sent data lines.
func SSE(events ...string) string {
	var b strings.Builder
	for _, e := range events {
		b.WriteString("data: " + e + "\n\n")
	}
	return b.String()
}

// AnswerCase is an answer body and the outcome read from it.
type AnswerCase struct {
	Name string
	SSE  bool
	Body string
	Want view.Outcome
}

// CheckAnswers reads each body whole, in pieces of 7 bytes and byte by
// byte: the outcome is the same every time, and the reader holds no more
// than its bound.
func CheckAnswers(t *testing.T, c view.Meter, cases []AnswerCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.Name, func(t *testing.T) {
			for _, piece := range []int{len(tc.Body) + 1, 7, 1} {
				if got := readAnswer(t, c, tc.SSE, tc.Body, piece); got != tc.Want {
					t.Fatalf("in pieces of %d: got %+v, want %+v", piece, got, tc.Want)
				}
			}
		})
	}
}

// readAnswer reads body in pieces of piece bytes and checks the reader
// stays within its bounds.
func readAnswer(t *testing.T, c view.Meter, sse bool, body string, piece int) view.Outcome {
	t.Helper()
	r := c.AnswerReader(sse)
	for b := []byte(body); len(b) > 0; {
		n := min(piece, len(b))
		if w, err := r.Write(b[:n]); w != n || err != nil {
			t.Fatalf("Write: %d, %v", w, err)
		}
		b = b[n:]
	}
	if ar, ok := r.(*answer.Reader); ok {
		if held := ar.Held(); held > 2*answer.MaxJSON {
			t.Fatalf("the reader holds %d bytes", held)
		}
	}
	return r.Outcome()
}
