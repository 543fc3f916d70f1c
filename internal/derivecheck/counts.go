package derivecheck

import (
	"sync/atomic"

	"github.com/condense-proxy/condense-proxy/view"
)

// Counts counts what a codec does with a request, for the tests that hold
// the engine to one scan, one splice and one parse of a condensed
// request: its scans, its splices — those of a body other than Received,
// the one it was told is received, among them (OfACopy) — and its parses
// of a whole request (of Items items) and of a few items alone (Partial:
// view.ParsePatched). A test's codec embeds its codec and a Counts, and
// calls Scanned, Spliced and Parsed before passing each call on.
type Counts struct {
	Received                []byte
	Items                   int
	Scans, Splices, OfACopy atomic.Int32
	Parses, Partial         atomic.Int32
}

// Scanned counts a scan.
func (c *Counts) Scanned() { c.Scans.Add(1) }

// Parsed counts a parse of r, whole or of a few items.
func (c *Counts) Parsed(r *view.Request) {
	if len(r.Items) == c.Items {
		c.Parses.Add(1)
	} else {
		c.Partial.Add(1)
	}
}

// Spliced counts a splice of r, and whether r is not the received body.
func (c *Counts) Spliced(r *view.Request) {
	c.Splices.Add(1)
	if len(r.Body) == 0 || len(c.Received) == 0 || &r.Body[0] != &c.Received[0] {
		c.OfACopy.Add(1)
	}
}

// Reset starts the counts over for a request of items items; OfACopy
// goes on counting (a splice of a copy in any request, warm-up included,
// is one too many).
func (c *Counts) Reset(items int) {
	c.Items = items
	for _, n := range []*atomic.Int32{&c.Scans, &c.Splices, &c.Parses, &c.Partial} {
		n.Store(0)
	}
}
