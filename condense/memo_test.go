package condense

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/condense-proxy/condense-proxy/cache"
)

// TestDecisionRecord: a conversation's frozen decisions live in one
// record (one key per caller and conversation, not a key per decision),
// and a conversation whose decisions the version before kept under keys
// of their own — a rollout — is condensed byte for byte as if they had
// been in its record all along: after every request of one copy, its
// record is turned back into those keys, and it forwards what the other
// copy forwards.
func TestDecisionRecord(t *testing.T) {
	f := replicaForms(t)[0]
	for _, mode := range []string{ModeFull, ModeSelective, ModeAuto} {
		t.Run(mode, func(t *testing.T) {
			now, before := &countingCache{Memory: cache.NewMemory(256 << 20)}, &countingCache{Memory: cache.NewMemory(256 << 20)}
			ctx := context.Background()
			legacy, records, autoCut, states := 0, 0, 0, 0
			sameBytes(t, f, mode, recordEngine(now), recordEngine(before), "the conversation whose decisions had keys of their own", func() {
				// The version before's keys, in place of the record.
				if key := before.recordKey(); key != "" {
					if raw, ok := before.Get(ctx, key); ok {
						rest := strings.TrimPrefix(key, "plan:")
						for name, value := range decodeRecord(raw) {
							k := "plan:" + name + ":" + rest
							switch {
							case name == decisionAutoCut:
								k, value = "auto:"+rest, "full"
								autoCut++
							case strings.HasSuffix(name, noteSuffix):
								k = strings.TrimSuffix(name, noteSuffix) + ":" + rest + noteSuffix
							case slices.Contains(stateNames, name):
								k = name + ":" + rest
								states++
							}
							before.Set(ctx, k, []byte(value), time.Hour)
							legacy++
						}
						before.Delete(ctx, key)
					}
				}
			})
			now.keys.Range(func(k, _ any) bool {
				key := k.(string)
				if strings.HasPrefix(key, "auto:") || strings.HasPrefix(key, "cut:") || strings.HasPrefix(key, "cold:") {
					t.Errorf("a field of the record written under a key of its own: %s", key)
				}
				if strings.HasPrefix(key, "plan:") {
					if strings.Count(key, ":") != strings.Count(now.recordKey(), ":") {
						t.Errorf("a decision written under a key of its own: %s", key)
					}
					records++
				}
				return true
			})
			if mode != ModeFull && states == 0 { // full's folds keep no cut here
				t.Error("no cut or floor in the record: their old keys are not tested")
			}
			if mode == ModeAuto && autoCut == 0 {
				t.Error("auto never took the cut: its old key is not tested")
			}
			if records != 1 || legacy == 0 {
				t.Fatalf("%d records, %d decisions turned into keys of their own: the test tests nothing", records, legacy)
			}
		})
	}
}

// noSwap is a cache without compare-and-set.
type noSwap struct{ m *cache.Memory }

func (c noSwap) Get(ctx context.Context, k string) ([]byte, bool) { return c.m.Get(ctx, k) }
func (c noSwap) Set(ctx context.Context, k string, v []byte, ttl time.Duration) {
	c.m.Set(ctx, k, v, ttl)
}
func (c noSwap) Add(ctx context.Context, k string, v []byte, ttl time.Duration) ([]byte, bool) {
	return c.m.Add(ctx, k, v, ttl)
}

// TestStateWithoutSwap: over a cache without compare-and-set, each field
// of the conversation's state is kept under a key of its own, and the
// conversation is condensed byte for byte as over one with it.
func TestStateWithoutSwap(t *testing.T) {
	sameBytes(t, replicaForms(t)[0], ModeAuto, recordEngine(cache.NewMemory(256<<20)), recordEngine(noSwap{cache.NewMemory(256 << 20)}),
		"the engine over a cache without compare-and-set", nil)
}

// recordEngine is the engine of the record's tests, over c.
func recordEngine(c Cache) *Engine {
	return New(Deps{Counter: counter, Models: limits(48_000), Cache: c, Now: func() time.Time { return time.Unix(1_700_000_000, 0) }},
		Options{SelectiveEnabled: true, Summarizer: "extractive"})
}

// sameBytes hands a and b every request of f in mode, in turn, and fails
// when they forward other bytes (what names b); after, when set,
// runs after each request, once both engines' background work is done.
func sameBytes(t *testing.T, f sessionForm, mode string, a, b *Engine, what string, after func()) {
	t.Helper()
	ctx := context.Background()
	for k := 0; k < f.turns; k++ {
		body, err := f.req(k)
		if err != nil {
			t.Fatal(err)
		}
		ra, err := a.Condense(ctx, Request{Codec: f.codec, Body: body, Mode: mode, Scope: "s"})
		if err != nil {
			t.Fatal(err)
		}
		rb, err := b.Condense(ctx, Request{Codec: f.codec, Body: body, Mode: mode, Scope: "s"})
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(ra.Body, rb.Body) {
			t.Fatalf("request %d: %s forwarded other bytes", k, what)
		}
		// What the requests started in the background is done before the
		// next one (and before after changes the cache under it).
		if err := errors.Join(a.Close(ctx), b.Close(ctx)); err != nil {
			t.Fatal(err)
		}
		if after != nil {
			after()
		}
	}
}
