package selective

import (
	"bytes"
	"context"
	"testing"
)

// TestDigestKeysRemembered holds the key memo to the keys made without
// it: one Condenser across a growing session's turns (its memo warm), and
// the same turn with an old output edited in place, give every digest the
// id and text a new Condenser gives it.
func TestDigestKeysRemembered(t *testing.T) {
	opts := Options{KeepRecentToolOutputs: 2, MinToolOutputTokens: 200}
	warm := New(opts, count, nil)
	apply := func(c *Condenser, body []byte) []Made {
		res, err := c.Apply(context.Background(), Request{Codec: chatCodec, Body: body, Messages: units(t, body), Need: 1 << 30, Scope: "s"})
		if err != nil {
			t.Fatal(err)
		}
		return res.Made
	}
	same := func(what string, got, want []Made) {
		t.Helper()
		if len(got) != len(want) || len(want) == 0 {
			t.Fatalf("%s: %d digests, %d without the memo", what, len(got), len(want))
		}
		for i := range want {
			if got[i].ID != want[i].ID || got[i].Text != want[i].Text {
				t.Fatalf("%s: digest %d is %s, %s without the memo", what, i, got[i].ID, want[i].ID)
			}
		}
	}
	var last []Made
	for n := 6; n <= 12; n++ {
		body := session(n)
		last = apply(warm, body)
		same("turn", last, apply(New(opts, count, nil), body))
	}
	// The oldest output, its bytes changed and its length kept.
	edited := bytes.Replace(session(12), []byte("planted error 0"), []byte("planted error Z"), 1)
	got := apply(warm, edited)
	same("edited turn", got, apply(New(opts, count, nil), edited))
	if got[0].ID == last[0].ID {
		t.Fatalf("the edited output kept its digest id %s", got[0].ID)
	}
}
