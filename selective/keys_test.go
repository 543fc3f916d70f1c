package selective

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/condense-proxy/condense-proxy/cache"
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
		if c != warm {
			return res.Made
		}
		// The warm Condenser's body: its digests' values remembered.
		cold, err := New(opts, count, nil).Apply(context.Background(), Request{Codec: chatCodec, Body: body, Messages: units(t, body), Need: 1 << 30, Scope: "s"})
		if err != nil || !bytes.Equal(res.Body, cold.Body) {
			t.Fatalf("the body differs from a new Condenser's (%v)", err)
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

// TestMadeDigestsPerScope: what a process remembers of a digest is the
// caller's, as the cache is: a digest cached for one scope (here an
// older text) is not what another scope's request gets.
func TestMadeDigestsPerScope(t *testing.T) {
	opts := Options{KeepRecentToolOutputs: 2, MinToolOutputTokens: 200}
	body := session(8)
	ctx := context.Background()
	first, err := New(opts, count, nil).Apply(ctx, Request{Codec: chatCodec, Body: body, Messages: units(t, body), Need: 1 << 30, Scope: "b"})
	if err != nil || len(first.Made) == 0 {
		t.Fatalf("no digest to test with (%v)", err)
	}
	id, fresh := first.Made[0].ID, first.Made[0].Text
	store := cache.NewMemory(1 << 20)
	older := "[condense-proxy digest of an older version]\nold text"
	store.Set(ctx, "dig:a:"+id, []byte(older), time.Hour)
	c := New(opts, count, store)
	for _, tc := range []struct{ scope, want string }{{"a", older}, {"b", fresh}, {"a", older}, {"b", fresh}} {
		res, err := c.Apply(ctx, Request{Codec: chatCodec, Body: body, Messages: units(t, body), Need: 1 << 30, Scope: tc.scope})
		if err != nil || len(res.Made) == 0 || res.Made[0].ID != id {
			t.Fatalf("scope %s: %v %+v", tc.scope, err, res.Made)
		}
		if got := res.Made[0].Text; got != tc.want {
			t.Fatalf("scope %s got digest %q, want %q", tc.scope, got, tc.want)
		}
		if !bytes.Contains(res.Body, chatCodec.TextValue(tc.want)) {
			t.Fatalf("scope %s: its digest is not in the body", tc.scope)
		}
	}
}

// missFirst is a replica's view of a shared cache whose first read of
// each key misses: two replicas making the same digest at once.
type missFirst struct {
	*cache.Memory
	seen map[string]bool
}

func (m *missFirst) Get(ctx context.Context, key string) ([]byte, bool) {
	if !m.seen[key] {
		m.seen[key] = true
		return nil, false
	}
	return m.Memory.Get(ctx, key)
}

// TestMadeDigestsReadBack: two replicas that make the same digest at once
// with texts that differ (their models count the output differently) both
// go on with the one the shared cache kept, not each its own.
func TestMadeDigestsReadBack(t *testing.T) {
	opts := Options{KeepRecentToolOutputs: 2, MinToolOutputTokens: 200}
	body := session(8)
	ctx := context.Background()
	store := cache.NewMemory(1 << 20)
	a := New(opts, count, &missFirst{Memory: store, seen: map[string]bool{}})
	b := New(opts, count, &missFirst{Memory: store, seen: map[string]bool{}})
	apply := func(c *Condenser, extra int) Made {
		msgs := units(t, body)
		for i := range msgs {
			msgs[i].Tokens += extra
		}
		res, err := c.Apply(ctx, Request{Codec: chatCodec, Body: body, Messages: msgs, Need: 1 << 30, Scope: "s"})
		if err != nil || len(res.Made) == 0 {
			t.Fatalf("no digest (%v)", err)
		}
		return res.Made[0]
	}
	// Both make it at once (each reads before the other writes): b's is
	// written last.
	first := apply(a, 0)
	kept := apply(b, 7)
	if kept.Text == first.Text {
		t.Fatal("the two replicas' texts do not differ: nothing tested")
	}
	for _, c := range []*Condenser{a, b, a, b} {
		if got := apply(c, 0); got.Text != kept.Text {
			t.Fatalf("a replica forwards %q, the cache holds %q", got.Text, kept.Text)
		}
	}
}
