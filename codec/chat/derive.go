package chat

import (
	"github.com/tidwall/gjson"

	"github.com/condense-proxy/condense-proxy/codec/internal/compaction"
	"github.com/condense-proxy/condense-proxy/jsonscan"
	"github.com/condense-proxy/condense-proxy/tokenizer"
	"github.com/condense-proxy/condense-proxy/view"
)

var _ view.Deriver = (*Codec)(nil)

// Derive implements view.Deriver: Scan of out laid out as l. The messages
// carried keep their counts and the spans of their fields (relative to
// the message); the new or changed ones are validated, their fields found
// and counted as count counts them; the tools and the reply priming are
// carried.
func (c *Codec) Derive(in *view.Request, out []byte, l view.Layout) (*view.Request, error) {
	if err := c.counter.CheckItems(len(l.Items)); err != nil {
		return nil, tooMany{err}
	}
	isc, _ := in.Private.(*scan)
	k := len(messageKeys)
	sc := &scan{fields: make([][2]int, len(l.Items)*k)}
	r := &view.Request{Body: out, Model: in.Model, Encoding: in.Encoding, Items: l.Items, Array: l.Array, Private: sc}
	r.Total = in.Total - in.ItemTokens()
	for i := range r.Items {
		it := &r.Items[i]
		f := sc.message(i)
		if src := l.Src[i]; src >= 0 {
			r.CacheHits++
			if isc != nil && (src+1)*k <= len(isc.fields) {
				copy(f, isc.message(src))
			} else {
				jsonscan.FieldSpansValid(in.Raw(src), messageKeys, f)
			}
			r.Total += it.Tokens
			continue
		}
		raw := r.Raw(i)
		if !jsonscan.Valid(raw) {
			return nil, view.ErrNotRequest
		}
		jsonscan.FieldSpansValid(raw, messageKeys, f)
		it.Hash = tokenizer.ItemHash(raw)
		n, hit := c.counter.CachedHash(r.Encoding, "msg", it.Hash, func() int {
			return countMessage(c.counter, r.Encoding, gjson.Parse(raw))
		})
		it.Tokens = n
		if hit {
			r.CacheHits++
		}
		r.Total += it.Tokens
	}
	c.finish(r, sc)
	return r, nil
}

// finish sets what Scan reads of a counted request's messages: the head
// (leading system/developer messages, then the first user message) and
// the agent's own compaction request (its last message, a user message,
// opens with the agent's summary instruction).
func (c *Codec) finish(r *view.Request, sc *scan) {
	r.Private = sc
	role := func(i int) string { return str(r.Raw(i), sc.message(i)[fieldRole]) }
	h := 0
	for h < len(r.Items) && (role(h) == view.RoleSystem || role(h) == view.RoleDeveloper) {
		h++
	}
	if h < len(r.Items) && role(h) == view.RoleUser {
		h++
	}
	r.Head = h
	if n := len(r.Items); n > 0 && role(n-1) == view.RoleUser {
		if sp := sc.message(n - 1)[fieldContent]; sp[1] > 0 {
			r.Compaction = compaction.Content(r.Raw(n - 1)[sp[0]:sp[1]])
		}
	}
}
