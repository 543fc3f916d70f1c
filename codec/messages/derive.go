package messages

import (
	"github.com/condense-proxy/condense-proxy/codec/internal/items"
	"github.com/condense-proxy/condense-proxy/view"
)

var _ view.Deriver = (*Codec)(nil)

// Derive implements view.Deriver: Scan of out laid out as l, the head
// and the compaction mark read from the messages as Scan reads them.
func (c *Codec) Derive(in *view.Request, out []byte, l view.Layout) (*view.Request, error) {
	r, err := items.Derive(c.counter, in, out, l, "messages-message", false, c.countMessage)
	if err != nil {
		return nil, err
	}
	if len(r.Items) > 0 && isTask(r.Raw(0)) {
		r.Head = 1
	}
	if n := len(r.Items); n > 0 {
		r.Compaction = lastCompaction(r.Raw(n - 1))
	}
	return r, nil
}
