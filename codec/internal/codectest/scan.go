package codectest

import (
	"errors"
	"math/rand"
	"reflect"
	"strings"
	"testing"

	"github.com/condense-proxy/condense-proxy/tokenizer"
	"github.com/condense-proxy/condense-proxy/view"
)

// RandomBody is open, then one to five objects, then "]}": most objects
// take the fields wellFormed picks, and each up to two more of fields,
// in a shuffled order (keys repeated, escaped, reordered).
func RandomBody(rng *rand.Rand, open string, fields []string, wellFormed func() []string) []byte {
	var b strings.Builder
	b.WriteString(open)
	for m, n := 0, 1+rng.Intn(5); m < n; m++ {
		if m > 0 {
			b.WriteByte(',')
		}
		var fs []string
		if rng.Intn(4) > 0 {
			fs = wellFormed()
		}
		for k := rng.Intn(3); k > 0; k-- {
			fs = append(fs, fields[rng.Intn(len(fields))])
		}
		rng.Shuffle(len(fs), func(a, b int) { fs[a], fs[b] = fs[b], fs[a] })
		b.WriteString("{" + strings.Join(fs, ",") + "}")
	}
	b.WriteString(`]}`)
	return []byte(b.String())
}

// ScanReadsAsAfresh scans body with c (o200k) and checks that what the
// scan recorded of each item's fields gives what the item read afresh
// gives: its count (count of its raw JSON), the parse and the texts. It
// returns the parsed request, or nil when the body does not scan or
// parse (the parse's error then being view.ErrInvalid, as afresh).
func ScanReadsAsAfresh(t *testing.T, c view.Codec, body []byte, count func(raw string) int) *view.Request {
	t.Helper()
	scanned, err := c.Scan(body, func(string) string { return tokenizer.O200kBase })
	if err != nil {
		return nil
	}
	for m := range scanned.Items {
		if got, want := scanned.Items[m].Tokens, count(scanned.Raw(m)); got != want {
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
		return nil
	}
	if !reflect.DeepEqual(scanned.Items, afresh.Items) || scanned.Head != afresh.Head {
		t.Fatalf("%s: parsed %+v, afresh %+v", body, scanned.Items, afresh.Items)
	}
	for m := range scanned.Items {
		if got, want := c.Text(scanned, m), c.Text(&afresh, m); !reflect.DeepEqual(got, want) {
			t.Fatalf("%s: message %d text %+v, afresh %+v", scanned.Raw(m), m, got, want)
		}
	}
	return scanned
}
