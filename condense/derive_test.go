package condense

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/condense-proxy/condense-proxy/codec/chat"
	"github.com/condense-proxy/condense-proxy/codec/responses"
	"github.com/condense-proxy/condense-proxy/internal/corpus"
	"github.com/condense-proxy/condense-proxy/internal/derivecheck"
	"github.com/condense-proxy/condense-proxy/selective"
	"github.com/condense-proxy/condense-proxy/view"
)

// chatCounting and respCounting are codecs that count their scans (every
// other method is their codec's).
type chatCounting struct {
	*chat.Codec
	scans atomic.Int32
}

func (c *chatCounting) Scan(body []byte, enc func(string) string) (*view.Request, error) {
	c.scans.Add(1)
	return c.Codec.Scan(body, enc)
}

func (c *chatCounting) scanned() int32 { return c.scans.Load() }

type respCounting struct {
	*responses.Codec
	scans atomic.Int32
}

func (c *respCounting) Scan(body []byte, enc func(string) string) (*view.Request, error) {
	c.scans.Add(1)
	return c.Codec.Scan(body, enc)
}

func (c *respCounting) scanned() int32 { return c.scans.Load() }

// sessionForm is a synthetic session in one wire format: its codec and
// its k-th request of turns.
type sessionForm struct {
	name  string
	codec view.Codec
	req   func(k int) ([]byte, error)
	turns int
}

// sessionForms returns the synthetic session of seed and chars in chat
// completions and Responses form.
func sessionForms(seed int64, chars int) []sessionForm {
	sess, _ := corpus.Synthetic(seed, chars)
	rs := corpus.Responses(sess)
	ends := sess.TurnEnds()
	return []sessionForm{
		{"chat", chatCodec, func(k int) ([]byte, error) { return sess.Request("gpt-4o", ends[k]) }, len(ends)},
		{"responses", responses.New(counter), rs.Request, rs.Turns()},
	}
}

// TestDerivedCountsMatchScan condenses growing synthetic sessions in chat
// completions and Responses form in every mode, with digests and cleared
// tool inputs: every condensed body's count is derived from the edits
// that made it (TestMain compares each with a scan of the body: the
// total, every item's span, count and hash, the head and the parse), and
// the reported count of the forwarded body is its scan's.
func TestDerivedCountsMatchScan(t *testing.T) {
	for _, f := range sessionForms(7, 400_000) {
		for _, mode := range []string{ModeFull, ModeSelective, ModeTruncate, ModeAuto} {
			t.Run(f.name+"/"+mode, func(t *testing.T) {
				before := derivecheck.Checked()
				e := newEngine(30000, nil, Options{Summarizer: "extractive", SelectiveEnabled: true, ChunkTokens: 4000, SummaryBudgetTokens: 2000,
					Selective: selective.Options{ClearToolInputs: true}})
				condensed, standIns := 0, 0
				for k := 0; k < f.turns; k += 3 {
					b, err := f.req(k)
					if err != nil {
						t.Fatal(err)
					}
					res, err := e.Condense(context.Background(), Request{Body: b, Codec: f.codec, Mode: mode, Scope: "s"})
					if err != nil {
						t.Fatal(err)
					}
					if res.Report.Applied == AppliedNone {
						continue
					}
					condensed++
					vr, err := f.codec.Scan(res.Body, func(string) string { return "o200k_base" })
					if err != nil {
						t.Fatalf("request %d: forwarded body does not scan: %v", k, err)
					}
					if res.Report.TokensAfter != vr.Total {
						t.Errorf("request %d: %d tokens after reported, its scan counts %d", k, res.Report.TokensAfter, vr.Total)
					}
					standIns += checkShapes(t, f.codec, vr, res.Report.Forwarded)
				}
				if condensed == 0 || derivecheck.Checked() == before {
					t.Fatalf("%d requests condensed, %d derived: the test tests nothing", condensed, derivecheck.Checked()-before)
				}
				if mode != ModeSelective && standIns == 0 {
					t.Errorf("%d requests condensed, no stand-in among the forwarded shapes", condensed)
				}
			})
		}
	}
}

// checkShapes checks the forwarded shapes a report gives (taken from the
// edit, not from a parse of the body) against a parse of vr, the
// forwarded body's scan: as many items, the same counts, the same roles
// but where the engine inserted an item (RoleStandIn). It returns how
// many stand-ins there are.
func checkShapes(t *testing.T, c view.Codec, vr *view.Request, shapes []ItemShape) int {
	t.Helper()
	if err := c.Parse(vr); err != nil {
		t.Fatalf("forwarded body does not parse: %v", err)
	}
	if len(shapes) != len(vr.Items) {
		t.Fatalf("%d forwarded shapes for %d items", len(shapes), len(vr.Items))
	}
	n := 0
	for i, s := range shapes {
		it := vr.Items[i]
		switch {
		case s.Tokens != it.Tokens:
			t.Errorf("item %d: shape of %d tokens, the item counts %d", i, s.Tokens, it.Tokens)
		case s.Role == RoleStandIn:
			n++
		case s.Role != it.Role:
			t.Errorf("item %d: shape's role %q, the item's %q", i, s.Role, it.Role)
		}
	}
	return n
}

// TestCondensedBodyScannedOnce: condensing a request whose summaries are
// cached scans the body as received and nothing else: the condensed
// body's count comes from the edit. (TestMain's checks, which scan every
// derived body, are off while it runs.)
func TestCondensedBodyScannedOnce(t *testing.T) {
	VerifyDerived(nil)
	defer VerifyDerived(derivecheck.Record)
	sess, _ := corpus.Synthetic(31, 300_000)
	chatBody, _ := sess.Request("gpt-4o", 0)
	rs := corpus.Responses(sess)
	respBody, _ := rs.Request(rs.Turns() - 1)
	type counting interface {
		view.Codec
		scanned() int32
	}
	for _, f := range []struct {
		name  string
		codec counting
		body  []byte
	}{
		{"chat", &chatCounting{Codec: chat.New(counter)}, chatBody},
		{"responses", &respCounting{Codec: responses.New(counter)}, respBody},
	} {
		for _, o := range []struct {
			mode    string
			window  int
			applied string
		}{{ModeFull, 40000, AppliedFull}, {ModeSelective, 100000, AppliedSelective}, {ModeTruncate, 40000, AppliedTruncate}, {ModeSelective, 40000, AppliedTruncate}} {
			e := newEngine(o.window, nil, Options{Summarizer: "extractive", SelectiveEnabled: true})
			if _, err := e.Condense(context.Background(), Request{Codec: f.codec, Body: f.body, Scope: "s", Mode: o.mode}); err != nil {
				t.Fatal(err)
			}
			before := f.codec.scanned()
			res, err := e.Condense(context.Background(), Request{Codec: f.codec, Body: f.body, Scope: "s", Mode: o.mode})
			if err != nil || res.Report.Applied != o.applied {
				t.Fatalf("%s %s at %d: %v %s (%s)", f.name, o.mode, o.window, err, res.Report.Applied, res.Report.Reason)
			}
			if n := f.codec.scanned() - before; n != 1 {
				t.Errorf("%s %s at %d: %d scans of one request, want 1", f.name, o.mode, o.window, n)
			}
		}
	}
}

// TestDeriveCheckCatchesWrongCounts: the comparison TestMain makes fails
// on a derived request whose total, item count or item span is off.
func TestDeriveCheckCatchesWrongCounts(t *testing.T) {
	b := body(t, session(3, 30))
	in, err := chatCodec.Scan(b, func(string) string { return "o200k_base" })
	if err != nil {
		t.Fatal(err)
	}
	e := view.Edit{From: in.Head, To: in.Head + 4, Insert: [][]byte{chatCodec.Note("a summary")}}
	out, err := chatCodec.Splice(in, e)
	if err != nil {
		t.Fatal(err)
	}
	l, err := view.SpliceLayout(in, in.Array, e)
	if err != nil {
		t.Fatal(err)
	}
	good, err := chatCodec.Derive(in, out, l)
	if err != nil {
		t.Fatal(err)
	}
	if err := derivecheck.Check(chatCodec, good, out); err != nil {
		t.Fatalf("a correct derivation fails: %v", err)
	}
	for name, spoil := range map[string]func(r *view.Request){
		"total":  func(r *view.Request) { r.Total++ },
		"tokens": func(r *view.Request) { r.Items[len(r.Items)-1].Tokens++ },
		"span":   func(r *view.Request) { r.Items[in.Head].End-- },
		"hash":   func(r *view.Request) { r.Items[0].Hash++ },
		"head":   func(r *view.Request) { r.Head = 0 },
	} {
		bad := *good
		bad.Items = append([]view.Item(nil), good.Items...)
		spoil(&bad)
		if err := derivecheck.Check(chatCodec, &bad, out); err == nil {
			t.Errorf("%s: a wrong derivation passes", name)
		} else {
			t.Log(name, ":", fmt.Sprint(err))
		}
	}
}

// chatSplicing and respSplicing are codecs counting their scans and
// splices (every other method is their codec's).
type chatSplicing struct {
	*chat.Codec
	derivecheck.Counts
}

func (c *chatSplicing) Scan(body []byte, enc func(string) string) (*view.Request, error) {
	c.Scanned()
	return c.Codec.Scan(body, enc)
}

func (c *chatSplicing) Splice(r *view.Request, e view.Edit) ([]byte, error) {
	c.Spliced(r)
	return c.Codec.Splice(r, e)
}

func (c *chatSplicing) Parse(r *view.Request) error {
	c.Parsed(r)
	return c.Codec.Parse(r)
}

func (c *chatSplicing) counts() *derivecheck.Counts { return &c.Counts }

type respSplicing struct {
	*responses.Codec
	derivecheck.Counts
}

func (c *respSplicing) Scan(body []byte, enc func(string) string) (*view.Request, error) {
	c.Scanned()
	return c.Codec.Scan(body, enc)
}

func (c *respSplicing) Splice(r *view.Request, e view.Edit) ([]byte, error) {
	c.Spliced(r)
	return c.Codec.Splice(r, e)
}

func (c *respSplicing) Parse(r *view.Request) error {
	c.Parsed(r)
	return c.Codec.Parse(r)
}

func (c *respSplicing) counts() *derivecheck.Counts { return &c.Counts }

// TestTwoStageSplicedOnce: a request condensed by digests and a window
// over them — selective's digests not enough, or the newest steps'
// outputs digested before the window —, its summaries and digests
// cached, is scanned once (as received: the forwarded body's count is
// derived from the composed edit) and spliced once, from the body as
// received: the digested copy the window is planned on is never spliced
// (nor scanned). Digests with no item omitted are not spliced at all.
// It is parsed once too: the digested copy's parse is derived from the
// received one's, only the digested items parsed again, alone
// (view.ParsePatched).
func TestTwoStageSplicedOnce(t *testing.T) {
	VerifyDerived(nil)
	defer VerifyDerived(derivecheck.Record)
	type counting interface {
		view.Codec
		counts() *derivecheck.Counts
	}
	splicing := map[string]func() counting{
		"chat":      func() counting { return &chatSplicing{Codec: chat.New(counter)} },
		"responses": func() counting { return &respSplicing{Codec: responses.New(counter)} },
	}
	for _, f := range sessionForms(17, 260_000) {
		hits := map[string]int{}
		for _, o := range []struct {
			mode   string
			window int
		}{{ModeSelective, 9000}, {ModeSelective, 16000}, {ModeAuto, 12000}, {ModeTruncate, 6000}} {
			e := newEngine(o.window, nil, Options{Summarizer: "extractive", SelectiveEnabled: true, ChunkTokens: 3000, SummaryBudgetTokens: 1500,
				KeepRecentTurns: 4, Selective: selective.Options{ClearToolInputs: true}})
			for k := 0; k < f.turns; k += 2 {
				b, err := f.req(k)
				if err != nil {
					t.Fatal(err)
				}
				codec := splicing[f.name]()
				c := codec.counts()
				c.Received = b
				req := Request{Body: b, Codec: codec, Mode: o.mode, Scope: "s"}
				if _, err := e.Condense(context.Background(), req); err != nil {
					t.Fatal(err)
				}
				scanned, err := codec.Scan(b, func(string) string { return "o200k_base" })
				if err != nil {
					t.Fatal(err)
				}
				c.Reset(len(scanned.Items))
				res, err := e.Condense(context.Background(), req)
				if err != nil {
					t.Fatal(err)
				}
				paths := twoStage(res.Report)
				if len(paths) == 0 {
					continue
				}
				name := strings.Join(paths, ",")
				hits[name]++
				omitted := false
				for _, ch := range res.Report.Changes {
					omitted = omitted || ch.Kind != ChangeDigest
				}
				want := int32(0)
				if omitted {
					want = 1
				}
				if n := c.Scans.Load(); n != 1 {
					t.Errorf("%s %s %d, request %d (%s): %d scans, want 1", f.name, o.mode, o.window, k, name, n)
				}
				if n := c.Splices.Load(); n != want {
					t.Errorf("%s %s %d, request %d (%s): %d splices, want %d", f.name, o.mode, o.window, k, name, n, want)
				}
				if n := c.Parses.Load(); n != 1 {
					t.Errorf("%s %s %d, request %d (%s): %d whole parses, want 1", f.name, o.mode, o.window, k, name, n)
				}
				// One parse of the digested items per round of digests:
				// the frontier's, the newest steps' (shrunk), or both.
				if n := c.Partial.Load(); n < 1 || n > 2 {
					t.Errorf("%s %s %d, request %d (%s): %d parses of the digested items, want 1 or 2", f.name, o.mode, o.window, k, name, n)
				}
				if n := c.OfACopy.Load(); n != 0 {
					t.Fatalf("%s %s %d, request %d (%s): %d splices of a digested copy", f.name, o.mode, o.window, k, name, n)
				}
			}
		}
		if hits["digests+window"] == 0 || hits["digests+window,shrunk"] == 0 {
			t.Errorf("%s: paths taken %v: the test tests nothing there", f.name, hits)
		}
		t.Logf("%s: %v", f.name, hits)
	}
}
