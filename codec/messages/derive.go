package messages

import (
	"errors"
	"fmt"

	"github.com/condense-proxy/condense-proxy/codec/internal/items"
	"github.com/condense-proxy/condense-proxy/view"
)

var _ view.Deriver = (*Codec)(nil)

// Spliced implements view.Deriver: the scan of Splice(in, e) without
// scanning it, the messages kept carrying their counts.
func (c *Codec) Spliced(in *view.Request, e view.Edit, out []byte) (*view.Request, error) {
	if in.Array[1] == 0 {
		return nil, errors.New("messages: no messages array to derive")
	}
	return c.derive(in, out, view.SpliceLayout(in, in.Array, e))
}

// Patched implements view.Deriver: the scan of a body patched inside its
// messages, only the patched ones counted again.
func (c *Codec) Patched(in *view.Request, patches []view.Patch, out []byte) (*view.Request, error) {
	l, err := view.PatchLayout(in, patches)
	if err != nil {
		return nil, fmt.Errorf("messages: %w", err)
	}
	return c.derive(in, out, l)
}

// derive is Scan of out laid out as l: the head and the compaction mark
// read from the messages as Scan reads them.
func (c *Codec) derive(in *view.Request, out []byte, l view.Layout) (*view.Request, error) {
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
