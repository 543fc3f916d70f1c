package messages

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/condense-proxy/condense-proxy/condense"
	"github.com/condense-proxy/condense-proxy/internal/derivecheck"
	"github.com/condense-proxy/condense-proxy/selective"
	"github.com/condense-proxy/condense-proxy/view"
)

// scanCounting is the codec counting its scans (every other method its
// own).
type scanCounting struct {
	*Codec
	scans atomic.Int32
}

func (c *scanCounting) Scan(body []byte, enc func(string) string) (*view.Request, error) {
	c.scans.Add(1)
	return c.Codec.Scan(body, enc)
}

// TestCondensedBodyScannedOnce: condensing a Messages request whose
// summaries (or digests) are cached scans the body as received and nothing
// else: the condensed body's count comes from the edit. (TestMain's
// checks, which scan every derived body, are off while it runs.)
func TestCondensedBodyScannedOnce(t *testing.T) {
	condense.VerifyDerived(nil)
	defer condense.VerifyDerived(derivecheck.Record)
	b := sessionOfSize(31, 300_000)
	for _, o := range []struct {
		mode    string
		window  int
		applied string
	}{
		{condense.ModeFull, 40000, condense.AppliedFull},
		{condense.ModeSelective, 100000, condense.AppliedSelective},
		{condense.ModeTruncate, 40000, condense.AppliedTruncate},
		{condense.ModeSelective, 12000, condense.AppliedTruncate},
	} {
		e, c := newEngine(o.window, condense.Options{SelectiveEnabled: true})
		sc := &scanCounting{Codec: c}
		req := condense.Request{Body: b, Codec: sc, Scope: "s", Mode: o.mode}
		if _, err := e.Condense(context.Background(), req); err != nil {
			t.Fatal(err)
		}
		sc.scans.Store(0)
		res, err := e.Condense(context.Background(), req)
		if err != nil || res.Report.Applied != o.applied {
			t.Fatalf("%s at %d: %v %s (%s)", o.mode, o.window, err, res.Report.Applied, res.Report.Reason)
		}
		if n := sc.scans.Load(); n != 1 {
			t.Errorf("%s at %d: %d scans of one request, want 1", o.mode, o.window, n)
		}
	}
}

// spliceCounting is the codec counting its scans, splices and parses
// (derivecheck.Counts).
type spliceCounting struct {
	*Codec
	derivecheck.Counts
}

func (c *spliceCounting) Parse(r *view.Request) error {
	c.Parsed(r)
	return c.Codec.Parse(r)
}

func (c *spliceCounting) Scan(body []byte, enc func(string) string) (*view.Request, error) {
	c.Scanned()
	return c.Codec.Scan(body, enc)
}

func (c *spliceCounting) Splice(r *view.Request, e view.Edit) ([]byte, error) {
	c.Spliced(r)
	return c.Codec.Splice(r, e)
}

// TestTwoStageSplicedOnce: a Messages request condensed by digests and a
// window over them (selective's digests not enough; the newest steps'
// outputs digested before the window), its summaries and digests cached,
// is scanned once, as received, and spliced once, from the body as
// received — the digested copy the window is planned on is never spliced
// nor scanned, nor parsed whole —, or not at all when its digests omit no
// item.
func TestTwoStageSplicedOnce(t *testing.T) {
	condense.VerifyDerived(nil)
	defer condense.VerifyDerived(derivecheck.Record)
	hits := map[string]int{}
	for _, thinking := range []bool{true, false} {
		msgs := claudeSession(23, 80, thinking)
		for _, o := range []struct {
			mode   string
			window int
		}{{condense.ModeSelective, 9000}, {condense.ModeSelective, 16000}, {condense.ModeAuto, 12000}, {condense.ModeTruncate, 6000}} {
			e, codec := newEngine(o.window, condense.Options{SelectiveEnabled: true, ChunkTokens: 3000, SummaryBudgetTokens: 1500,
				KeepRecentTurns: 4, Selective: selective.Options{ClearToolInputs: true}})
			for k := 3; k <= len(msgs); k += 4 {
				b := body(msgs[:k], "claude-fable-4", thinking)
				c := &spliceCounting{Codec: codec, Counts: derivecheck.Counts{Received: b}}
				req := condense.Request{Body: b, Codec: c, Mode: o.mode, Scope: "s"}
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
				want := int32(0)
				for _, ch := range res.Report.Changes {
					if ch.Kind != condense.ChangeDigest {
						want = 1
					}
				}
				at := fmt.Sprintf("thinking=%v %s %d, %d messages (%s)", thinking, o.mode, o.window, k, name)
				if n := c.Scans.Load(); n != 1 {
					t.Errorf("%s: %d scans, want 1", at, n)
				}
				if n := c.Splices.Load(); n != want {
					t.Errorf("%s: %d splices, want %d", at, n, want)
				}
				if n := c.OfACopy.Load(); n != 0 {
					t.Fatalf("%s: %d splices of a digested copy", at, n)
				}
				if n := c.Parses.Load(); n != 1 {
					t.Errorf("%s: %d whole parses, want 1", at, n)
				}
			}
		}
	}
	if hits["digests+window"] == 0 || hits["digests+window,shrunk"] == 0 || hits["shrunk"] == 0 {
		t.Errorf("paths taken %v: the test tests nothing on some", hits)
	}
	t.Logf("%v", hits)
}
