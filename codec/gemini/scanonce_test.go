package gemini

import (
	"context"
	"testing"

	"github.com/condense-proxy/condense-proxy/cache"
	"github.com/condense-proxy/condense-proxy/condense"
	"github.com/condense-proxy/condense-proxy/internal/derivecheck"
	"github.com/condense-proxy/condense-proxy/tokenizer"
	"github.com/condense-proxy/condense-proxy/view"
)

// counting is the codec counting its scans, splices and parses
// (derivecheck.Counts).
type counting struct {
	*Codec
	derivecheck.Counts
}

func (c *counting) Parse(r *view.Request) error {
	c.Parsed(r)
	return c.Codec.Parse(r)
}

func (c *counting) Scan(body []byte, enc func(string) string) (*view.Request, error) {
	c.Scanned()
	return c.Codec.Scan(body, enc)
}

func (c *counting) Splice(r *view.Request, e view.Edit) ([]byte, error) {
	c.Spliced(r)
	return c.Codec.Splice(r, e)
}

// TestCondensedOnce: condensing a Gemini request whose summaries and
// digests are cached scans the body as received once and splices it once
// (not at all when digests alone condense it) — the condensed body's
// count comes from the edit, filler turns included (Align) —, and parses
// it once (a digested copy a window is planned on takes its parse:
// view.ParsePatched), in every mode. (TestMain's checks, which scan every derived body, are off while
// it runs.)
func TestCondensedOnce(t *testing.T) {
	condense.VerifyDerived(nil)
	defer condense.VerifyDerived(derivecheck.Record)
	b := body(cliSession(31, 40))
	for _, o := range []struct {
		mode    string
		window  int
		applied string
	}{
		{condense.ModeFull, 30000, condense.AppliedFull},
		{condense.ModeSelective, 60000, condense.AppliedSelective},
		{condense.ModeTruncate, 30000, condense.AppliedTruncate},
		{condense.ModeSelective, 12000, condense.AppliedTruncate},
		{condense.ModeAuto, 30000, ""},
	} {
		e := condense.New(condense.Deps{
			Counter: sharedCounter,
			Models: condense.ModelsFunc(func(string) condense.ModelLimits {
				return condense.ModelLimits{Window: o.window, Threshold: 0.8, Encoding: tokenizer.O200kBase, SafetyFactor: 1}
			}),
			Cache: cache.NewMemory(64 << 20),
		}, condense.Options{Summarizer: "extractive", SelectiveEnabled: true})
		c := &counting{Codec: New(sharedCounter).WithModel("gemini-2.5-pro").(*Codec), Counts: derivecheck.Counts{Received: b}}
		req := condense.Request{Body: b, Codec: c, Scope: "s", Mode: o.mode}
		if _, err := e.Condense(context.Background(), req); err != nil {
			t.Fatal(err)
		}
		scanned, err := c.Codec.Scan(b, func(string) string { return tokenizer.O200kBase })
		if err != nil {
			t.Fatal(err)
		}
		c.Reset(len(scanned.Items))
		res, err := e.Condense(context.Background(), req)
		if err != nil || res.Report.Applied == condense.AppliedNone || o.applied != "" && res.Report.Applied != o.applied {
			t.Fatalf("%s at %d: %v %s (%s)", o.mode, o.window, err, res.Report.Applied, res.Report.Reason)
		}
		want := int32(0)
		for _, ch := range res.Report.Changes {
			if ch.Kind != condense.ChangeDigest {
				want = 1
			}
		}
		if s, sp := c.Scans.Load(), c.Splices.Load(); s != 1 || sp != want {
			t.Errorf("%s at %d (%s): %d scans and %d splices of one request, want 1 and %d", o.mode, o.window, res.Report.Applied, s, sp, want)
		}
		if n := c.OfACopy.Load(); n != 0 {
			t.Errorf("%s at %d: %d splices of a copy", o.mode, o.window, n)
		}
		if n := c.Parses.Load(); n != 1 {
			t.Errorf("%s at %d (%s): %d whole parses, want 1", o.mode, o.window, res.Report.Applied, n)
		}
	}
}
