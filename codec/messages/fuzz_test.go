package messages

import (
	"errors"
	"testing"

	"github.com/condense-proxy/condense-proxy/jsonscan"
	"github.com/condense-proxy/condense-proxy/tokenizer"
	"github.com/condense-proxy/condense-proxy/view"
)

// FuzzScan feeds raw bytes to the scanner: it never panics; a body it
// accepts has messages inside the body and a head within them; Parse, Text
// and Finish never panic; outputs and blocks lie inside their message; a
// parsed body spliced (the messages after the head replaced by a note) is
// still one well-formed JSON object that scans again.
func FuzzScan(f *testing.F) {
	f.Add(body(claudeSession(9, 2, true), "claude-fable-5-1", true))
	for _, s := range []string{
		`{"messages":[]}`,
		`{"model":"claude-sonnet-4-5","messages":[{"role":"user","content":"hi"}]}`,
		`{"messages":[{"role":"user","content":"x"},{"role":"assistant","content":[{"type":"thinking","thinking":"t","signature":"s"},{"type":"tool_use","id":"a","name":"n","input":{}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"a","content":[{"type":"text","text":"o"}]},{"type":"text","text":"more"}]}],"thinking":{"type":"enabled"}}`,
		`{"messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"a","tool_use_id":"b","content":"x","content":7}]}]}`,
		`{"messages":"x","messages":[1,"a",null,{"role":7}]}`,
		`{"m\u0065ssages":[]}`,
	} {
		f.Add([]byte(s))
	}
	c := New(tokenizer.New(tokenizer.Options{MaxMessages: 1000}))
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) > 64<<10 {
			return // shapes, not sizes
		}
		r, err := c.Scan(b, o200k)
		if err != nil {
			if !errors.Is(err, view.ErrNotRequest) && !errors.Is(err, view.ErrTooManyItems) {
				t.Fatalf("unexpected error %v", err)
			}
			return
		}
		if r.Head < 0 || r.Head > len(r.Items) || r.Total < 0 {
			t.Fatalf("head %d of %d items, total %d", r.Head, len(r.Items), r.Total)
		}
		for i, it := range r.Items {
			if it.Start < 0 || it.End > len(b) || it.Start >= it.End || it.Tokens < 0 {
				t.Fatalf("item %d: span [%d,%d) tokens %d in %d bytes", i, it.Start, it.End, it.Tokens, len(b))
			}
		}
		if err := c.Parse(r); err != nil {
			if !errors.Is(err, view.ErrInvalid) {
				t.Fatalf("parse error %v is not ErrInvalid", err)
			}
			return
		}
		for i, it := range r.Items {
			c.Text(r, i)
			for _, o := range it.Outputs {
				if o.Start < it.Start || o.End > it.End || (o.Value[1] > 0 && (o.Start+o.Value[1] > o.End || o.Value[0] <= 0)) {
					t.Fatalf("item %d: output [%d,%d) value %v outside the item [%d,%d)", i, o.Start, o.End, o.Value, it.Start, it.End)
				}
			}
		}
		out, err := c.Splice(r, view.Edit{From: r.Head, To: len(r.Items), Insert: [][]byte{c.Note("summary")}})
		if err != nil {
			t.Fatal(err)
		}
		if !jsonscan.Valid(string(out)) {
			t.Fatalf("spliced body is not JSON: %q", out)
		}
		r2, err := c.Scan(out, o200k)
		if err != nil || len(r2.Items) != r.Head+1 {
			t.Fatalf("spliced body does not scan back: %v", err)
		}
		fin, _, err := c.Finish(r, out)
		if err != nil || !jsonscan.Valid(string(fin)) {
			t.Fatalf("finished body is not JSON (%v): %q", err, fin)
		}
	})
}
