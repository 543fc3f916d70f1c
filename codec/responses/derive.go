package responses

import (
	"errors"
	"fmt"

	"github.com/condense-proxy/condense-proxy/codec/internal/items"
	"github.com/condense-proxy/condense-proxy/view"
)

var _ view.Deriver = (*Codec)(nil)

// Spliced implements view.Deriver: the scan of Splice(in, e) without
// scanning it, the items kept carrying their counts.
func (c *Codec) Spliced(in *view.Request, e view.Edit, out []byte) (*view.Request, error) {
	if in.Array[1] == 0 {
		return nil, errors.New("responses: no input array to derive")
	}
	return c.derive(in, out, view.SpliceLayout(in, in.Array, e))
}

// Patched implements view.Deriver: the scan of a body patched inside its
// items, only the patched ones counted again.
func (c *Codec) Patched(in *view.Request, patches []view.Patch, out []byte) (*view.Request, error) {
	l, err := view.PatchLayout(in, patches)
	if err != nil {
		return nil, fmt.Errorf("responses: %w", err)
	}
	return c.derive(in, out, l)
}

// derive is Scan of out laid out as l. A request marked untouchable by
// its fields outside the input keeps that mark (those bytes are in's); one
// whose mark came from a compaction_trigger item is not derived (it is
// never edited).
func (c *Codec) derive(in *view.Request, out []byte, l view.Layout) (*view.Request, error) {
	if in.Compaction == CompactionTrigger {
		return nil, fmt.Errorf("responses: %w: a compaction_trigger request", view.ErrNotDerivable)
	}
	r, err := items.Derive(c.counter, in, out, l, "responses-item", true, c.countItem)
	if err != nil {
		return nil, err
	}
	r.Head = head(r)
	r.Untouchable = in.Untouchable
	if n := len(r.Items); n > 0 {
		lastCompaction(r, r.Raw(n-1))
	}
	return r, nil
}
