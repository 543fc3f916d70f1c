package responses

import (
	"errors"
	"testing"

	"github.com/condense-proxy/condense-proxy/jsonscan"
	"github.com/condense-proxy/condense-proxy/tokenizer"
	"github.com/condense-proxy/condense-proxy/view"
)

// FuzzScan feeds raw bytes to the scanner: it never panics; a body it
// accepts has items inside the body and a head within them; Parse and Text
// never panic; a parsed body spliced (the items after the head replaced by
// a note) is still one well-formed JSON object that scans again.
func FuzzScan(f *testing.F) {
	// Small seeds: the fuzzer minimizes what it finds, and a large seed
	// makes every minimizing step slow.
	f.Add(codexBody(codexSessionSized(9, 3, 2, 2)))
	for _, s := range []string{
		`{"input":[]}`,
		`{"model":"gpt-5","input":[{"role":"user","content":"hi"}]}`,
		`{"input":[{"role":"developer","content":"x"},{"role":"user","content":[{"type":"input_text","text":"t"}]},{"type":"reasoning","summary":[],"encrypted_content":"QQ=="},{"type":"function_call","call_id":"c","name":"n","arguments":"{}"},{"type":"function_call_output","call_id":"c","output":"o"}]}`,
		`{"input":[{"type":"compaction","encrypted_content":"x"},{"type":"function_call_output","call_id":"c","output":[{"type":"input_text","text":"a"}]}],"previous_response_id":"r"}`,
		`{"input":"x","input":[1,"a",null,{"type":7}]}`,
		`{"inp\u0075t":[]}`,
	} {
		f.Add([]byte(s))
	}
	c := New(tokenizer.New(tokenizer.Options{MaxMessages: 1000}))
	f.Fuzz(func(t *testing.T, body []byte) {
		if len(body) > 64<<10 {
			return // shapes, not sizes: big bodies only slow the search
		}
		r, err := c.Scan(body, o200k)
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
			if it.Start < 0 || it.End > len(body) || it.Start >= it.End || it.Tokens < 0 {
				t.Fatalf("item %d: span [%d,%d) tokens %d in %d bytes", i, it.Start, it.End, it.Tokens, len(body))
			}
		}
		if err := c.Parse(r); err != nil {
			if !errors.Is(err, view.ErrInvalid) {
				t.Fatalf("parse error %v is not ErrInvalid", err)
			}
			return
		}
		if r.Head > len(r.Items) {
			t.Fatalf("parsed head %d of %d items", r.Head, len(r.Items))
		}
		for i, it := range r.Items {
			c.Text(r, i)
			for _, o := range it.Outputs {
				if o.Value[1] > 0 && (o.Start+o.Value[1] > it.End || o.Value[0] <= 0) {
					t.Fatalf("item %d: output value %v outside the item", i, o.Value)
				}
			}
			for _, cl := range it.Calls {
				if cl.ArgsSpan[1] > 0 && (cl.ArgsSpan[0] < it.Start || cl.ArgsSpan[1] > it.End) {
					t.Fatalf("item %d: arguments span %v outside the item", i, cl.ArgsSpan)
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
	})
}
