package condense

import (
	"bytes"
	"context"
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
			engine := func(c Cache) *Engine {
				return New(Deps{Counter: counter, Models: limits(48_000), Cache: c, Now: func() time.Time { return time.Unix(1_700_000_000, 0) }},
					Options{SelectiveEnabled: true, Summarizer: "extractive"})
			}
			now, before := &countingCache{Memory: cache.NewMemory(256 << 20)}, &countingCache{Memory: cache.NewMemory(256 << 20)}
			a, b := engine(now), engine(before)
			ctx := context.Background()
			legacy, records, autoCut, states := 0, 0, 0, 0
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
					t.Fatalf("request %d: the conversation whose decisions had keys of their own forwarded other bytes", k)
				}
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
			}
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
	f := replicaForms(t)[0]
	engine := func(c Cache) *Engine {
		return New(Deps{Counter: counter, Models: limits(48_000), Cache: c, Now: func() time.Time { return time.Unix(1_700_000_000, 0) }},
			Options{SelectiveEnabled: true, Summarizer: "extractive"})
	}
	plain := cache.NewMemory(256 << 20)
	a, b := engine(cache.NewMemory(256<<20)), engine(noSwap{plain})
	ctx := context.Background()
	for k := 0; k < f.turns; k++ {
		body, err := f.req(k)
		if err != nil {
			t.Fatal(err)
		}
		ra, err := a.Condense(ctx, Request{Codec: f.codec, Body: body, Mode: ModeAuto, Scope: "s"})
		if err != nil {
			t.Fatal(err)
		}
		rb, err := b.Condense(ctx, Request{Codec: f.codec, Body: body, Mode: ModeAuto, Scope: "s"})
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(ra.Body, rb.Body) {
			t.Fatalf("request %d: forwarded other bytes over a cache without compare-and-set", k)
		}
	}
}
