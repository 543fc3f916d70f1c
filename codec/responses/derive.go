package responses

import (
	"fmt"

	"github.com/condense-proxy/condense-proxy/codec/internal/items"
	"github.com/condense-proxy/condense-proxy/view"
)

var _ view.Deriver = (*Codec)(nil)

// Derive implements view.Deriver: Scan of out laid out as l. A request
// marked untouchable by its fields outside the input keeps that mark
// (those bytes are in's); one whose mark came from a compaction_trigger
// item is not derived (it is never edited).
func (c *Codec) Derive(in *view.Request, out []byte, l view.Layout) (*view.Request, error) {
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
