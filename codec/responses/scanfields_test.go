package responses

import (
	"errors"
	"math/rand"
	"reflect"
	"strings"
	"testing"

	"github.com/condense-proxy/condense-proxy/tokenizer"
	"github.com/condense-proxy/condense-proxy/view"
)

// TestScannedFieldsReadAsFound: what the scan found of each item's
// fields (items.Fields) gives the counts, the parse and the texts of the
// items looked up afresh — on random items that repeat, escape and
// reorder their keys, messages, calls and outputs.
func TestScannedFieldsReadAsFound(t *testing.T) {
	fields := []string{`"type":"message"`, `"type":"function_call_output"`, `"role":"user"`, `"role":"assistant"`,
		`"content":"ping 1"`, `"content":[{"type":"input_text","text":"hi"}]`, `"call_id":"c1"`, `"output":"out"`, `"output":[{"type":"input_text","text":"o"}]`,
		`"content":"a\"b"`, `"name":"bash"`, `"arguments":"{}"`, `"type":"function_call"`, `"id":"x"`, `"t\u0079pe":"message"`, `"content":"second"`, `"status":"completed"`}
	c := New(tokenizer.New(tokenizer.Options{}))
	rng := rand.New(rand.NewSource(37))
	parsed := 0
	for i := 0; i < 10000; i++ {
		var b strings.Builder
		b.WriteString(`{"model":"gpt-4o","input":[`)
		for m, n := 0, 1+rng.Intn(5); m < n; m++ {
			if m > 0 {
				b.WriteByte(',')
			}
			b.WriteByte('{')
			var fs []string
			if rng.Intn(4) > 0 {
				// Most messages are well formed: a role and a content.
				fs = append(fs, fields[rng.Intn(2)], fields[2+rng.Intn(2)], fields[4+rng.Intn(6)])
			}
			for k := rng.Intn(3); k > 0; k-- {
				fs = append(fs, fields[rng.Intn(len(fields))])
			}
			rng.Shuffle(len(fs), func(a, b int) { fs[a], fs[b] = fs[b], fs[a] })
			b.WriteString(strings.Join(fs, ","))
			b.WriteByte('}')
		}
		b.WriteString(`]}`)
		body := []byte(b.String())
		scanned, err := c.Scan(body, func(string) string { return tokenizer.O200kBase })
		if err != nil {
			continue
		}
		for m := range scanned.Items {
			if got, want := scanned.Items[m].Tokens, c.countItem(tokenizer.O200kBase, scanned.Raw(m)); got != want {
				t.Fatalf("%s: message %d counted %d, afresh %d", scanned.Raw(m), m, got, want)
			}
		}
		afresh := *scanned
		afresh.Private = nil
		afresh.Items = append([]view.Item(nil), scanned.Items...)
		errS, errA := c.Parse(scanned), c.Parse(&afresh)
		if (errS == nil) != (errA == nil) || (errS != nil && errS.Error() != errA.Error()) {
			t.Fatalf("%s: parse %v, afresh %v", body, errS, errA)
		}
		if errS != nil {
			if !errors.Is(errS, view.ErrInvalid) {
				t.Fatal(errS)
			}
			continue
		}
		parsed++
		if !reflect.DeepEqual(scanned.Items, afresh.Items) || scanned.Head != afresh.Head {
			t.Fatalf("%s: parsed %+v, afresh %+v", body, scanned.Items, afresh.Items)
		}
		for m := range scanned.Items {
			if got, want := c.Text(scanned, m), c.Text(&afresh, m); !reflect.DeepEqual(got, want) {
				t.Fatalf("%s: message %d text %+v, afresh %+v", scanned.Raw(m), m, got, want)
			}
		}
	}
	if parsed < 1000 {
		t.Fatalf("only %d bodies parsed", parsed)
	}
}
