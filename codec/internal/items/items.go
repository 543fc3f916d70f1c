// Package items is the scan the Messages and Responses codecs share: one
// validating pass over a request body that finds its top-level fields and
// the elements of its conversation array, and counts each element with the
// counter's per-item cache.
package items

import (
	"strings"

	"github.com/tidwall/gjson"

	"github.com/condense-proxy/condense-proxy/jsonscan"
	"github.com/condense-proxy/condense-proxy/tokenizer"
	"github.com/condense-proxy/condense-proxy/view"
)

type tooMany struct{ error }

func (tooMany) Is(target error) bool { return target == view.ErrTooManyItems }

// Scan scans body for the array under key. A body that is not a JSON
// object, has an escaped top-level key (it may decode to one the scan
// looks for), or whose key is absent or not an array (decoders take a
// repeated key's last occurrence) is view.ErrNotRequest, as is an empty
// array when emptyOK is false; more elements than the counter allows is
// view.ErrTooManyItems. Each element is counted by count (cached under
// kind; its Hash is set); the returned request's Total is the elements'
// sum, and enc is the encoding encodingFor gave for its model.
func Scan(c *tokenizer.Counter, body []byte, key, kind string, emptyOK bool, encodingFor func(model string) string,
	count func(enc, raw string) int) (r *view.Request, obj *jsonscan.Object, enc string, err error) {
	r, obj, enc, _, err = ScanFields(c, body, key, kind, emptyOK, encodingFor, nil, func(enc, raw string, _ Element) int { return count(enc, raw) })
	return r, obj, enc, err
}

// ScanFields is Scan that also finds, in the pass that hashes each
// element, the spans of its fields named keys (f, nil without keys), and
// hands count what it found of the element counted.
func ScanFields(c *tokenizer.Counter, body []byte, key, kind string, emptyOK bool, encodingFor func(model string) string,
	keys []string, count func(enc, raw string, e Element) int) (r *view.Request, obj *jsonscan.Object, enc string, f *Fields, err error) {
	o, ok := jsonscan.ScanObject(body, key)
	if !ok || o.EscapedKey {
		return nil, nil, "", nil, view.ErrNotRequest
	}
	sp, found := o.Get(key)
	if !found || o.Array[1] == 0 || sp != o.Array || (!emptyOK && len(o.Elements) == 0) {
		return nil, nil, "", nil, view.ErrNotRequest
	}
	if err := c.CheckItems(len(o.Elements)); err != nil {
		return nil, nil, "", nil, tooMany{err}
	}
	r = &view.Request{Body: body, Items: make([]view.Item, len(o.Elements)), Array: o.Array}
	if sp, ok := o.Get("model"); ok {
		r.Model = strings.Clone(gjson.Parse(r.Span(sp[0], sp[1])).String())
	}
	enc = encodingFor(r.Model)
	r.Encoding = enc
	// Each element is hashed once (the count cache's key, which the
	// engine's prefix log reuses) and looked up with the others under one
	// lock; only those not found are counted.
	if len(keys) > 0 {
		f = newFields(keys, len(o.Elements))
	}
	for i, sp := range o.Elements {
		raw := r.Span(sp[0], sp[1])
		if f != nil {
			f.read(i, raw)
		}
		r.Items[i] = view.Item{Start: sp[0], End: sp[1], Tokens: -1, Hash: tokenizer.ItemHash(raw)}
	}
	c.Lookup(enc, kind, len(r.Items), func(i int) uint64 { return r.Items[i].Hash }, func(i, n int) {
		r.Items[i].Tokens = n
		r.CacheHits++
	})
	batch := c.Batch(enc, kind, len(r.Items)-r.CacheHits)
	for i := range r.Items {
		it := &r.Items[i]
		if it.Tokens < 0 {
			raw := r.Raw(i)
			n, hit := batch.Count(it.Hash, func() int { return count(enc, raw, f.Element(i)) })
			it.Tokens = n
			if hit {
				r.CacheHits++
			}
		}
		r.Total += it.Tokens
	}
	return r, &o, enc, f, nil
}

// Derive returns the request a Scan of out would return, out being in's
// body with its conversation array laid out as l (view.Layout): the
// items carried keep their counts and hashes; the new or changed ones are
// validated, hashed and counted as Scan counts them (cached under kind);
// the counts outside the items (in.Total less in's items) are carried.
// Model and Array are set; the codec sets what depends on the items (the
// head, the compaction mark). An empty array is view.ErrNotRequest when
// emptyOK is false, as for Scan.
func Derive(c *tokenizer.Counter, in *view.Request, out []byte, l view.Layout, kind string, emptyOK bool,
	count func(enc, raw string) int) (r *view.Request, err error) {
	if !emptyOK && len(l.Items) == 0 {
		return nil, view.ErrNotRequest
	}
	if err := c.CheckItems(len(l.Items)); err != nil {
		return nil, tooMany{err}
	}
	enc := in.Encoding
	r = &view.Request{Body: out, Model: in.Model, Encoding: enc, Items: l.Items, Array: l.Array}
	r.Total = in.Total - in.ItemTokens()
	for i := range r.Items {
		it := &r.Items[i]
		if l.Src[i] >= 0 {
			r.CacheHits++
		} else {
			raw := r.Raw(i)
			if !jsonscan.Valid(raw) {
				return nil, view.ErrNotRequest
			}
			it.Hash = tokenizer.ItemHash(raw)
			n, hit := c.CachedHash(enc, kind, it.Hash, func() int { return count(enc, raw) })
			it.Tokens = n
			if hit {
				r.CacheHits++
			}
		}
		r.Total += it.Tokens
	}
	return r, nil
}
