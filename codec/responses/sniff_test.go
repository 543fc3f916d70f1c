package responses

import (
	"errors"
	"testing"

	"github.com/condense-proxy/condense-proxy/tokenizer"
	"github.com/condense-proxy/condense-proxy/view"
)

// TestSniff: an input, array or string, and no messages claims a body.
func TestSniff(t *testing.T) {
	c := New(nil)
	for body, want := range map[string]bool{
		`{"model":"gpt-5","input":[{"role":"user","content":"hi"}]}`:    true,
		`{"model":"gpt-5","input":"hi"}`:                                true,
		`{"model":"gpt-5","input":[],"messages":[]}`:                    false,
		`{"model":"gpt-5","messages":[{"role":"user","content":"hi"}]}`: false,
		`{"model":"gpt-5"}`: false,
		`[1]`:               false,
	} {
		if got := c.Sniff([]byte(body)); got != want {
			t.Errorf("Sniff(%s) = %v", body, got)
		}
	}
}

// TestScanSingleTurn: a string input is a request with nothing to
// condense — ErrSingleTurn, which is an ErrNotRequest (forwarded
// untouched); no input at all is only the latter.
func TestScanSingleTurn(t *testing.T) {
	c := New(tokenizer.New(tokenizer.Options{}))
	enc := func(string) string { return tokenizer.O200kBase }
	if _, err := c.Scan([]byte(`{"model":"gpt-5","input":"hi"}`), enc); !errors.Is(err, view.ErrSingleTurn) || !errors.Is(err, view.ErrNotRequest) {
		t.Errorf("a single turn: %v", err)
	}
	if _, err := c.Scan([]byte(`{"model":"gpt-5"}`), enc); !errors.Is(err, view.ErrNotRequest) || errors.Is(err, view.ErrSingleTurn) {
		t.Errorf("no input: %v", err)
	}
}
