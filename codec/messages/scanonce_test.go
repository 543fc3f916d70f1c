package messages

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/condense-proxy/condense-proxy/condense"
	"github.com/condense-proxy/condense-proxy/internal/derivecheck"
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
