package view

import (
	"errors"
	"fmt"
	"slices"
)

// Deriver is an optional capability of a Codec: the Request a Scan of a
// body made from a scanned request by an edit would return, derived from
// the edit instead of scanning the new body. The items carried over from
// the request keep their counts and hashes (their spans shifted); only
// the items the edit inserted or changed are counted, and the format's
// overheads outside the items are carried as they were.
type Deriver interface {
	// Derive returns the scan of out, the body an edit of in made, its
	// items laid out as l (SpliceLayout of a Splice, PatchLayout of
	// patches): the items l carries keep their counts, the others are
	// counted.
	Derive(in *Request, out []byte, l Layout) (*Request, error)
}

// Layout is where a derived body's items are: the conversation array
// (brackets included) and its items, in order. Src[i] is the index of
// the received item that Items[i] is a verbatim copy of (its Tokens and
// Hash are carried), or -1 for an item inserted or changed by the edit
// (its Tokens are -1 and its Hash 0: the codec counts it).
type Layout struct {
	Array [2]int
	Items []Item
	Src   []int
}

// ErrNotDerivable says an edit's result cannot be derived from its
// request (a patch outside the items): the codec scans it instead.
var ErrNotDerivable = errors.New("edit not derivable from its request")

// SpliceLayout returns the layout of SpliceArray(r, arr, e): the kept
// items shifted, the inserted ones and those e.Patches changed new. It
// returns an error (ErrNotDerivable) for an edit SpliceArray refuses.
func SpliceLayout(r *Request, arr [2]int, e Edit) (Layout, error) {
	patches, items, err := checkEdit(r, e)
	if err != nil {
		return Layout{}, fmt.Errorf("%w: %w", ErrNotDerivable, err)
	}
	n := len(r.Items) - (e.To - e.From) + len(e.Insert)
	l := Layout{Items: make([]Item, 0, n), Src: make([]int, 0, n)}
	at := arr[0] + 1
	add := func(size, src int) {
		if len(l.Items) > 0 {
			at++ // the comma
		}
		it := Item{Start: at, End: at + size, Tokens: -1}
		if src >= 0 {
			old := r.Items[src]
			it.Tokens, it.Hash = old.Tokens, old.Hash
		}
		l.Items = append(l.Items, it)
		l.Src = append(l.Src, src)
		at += size
	}
	p := 0
	keep := func(i int) {
		size, src := r.Items[i].End-r.Items[i].Start, i
		for p < len(patches) && items[p] < i {
			p++ // inside an item replaced
		}
		for ; p < len(patches) && items[p] == i; p++ {
			size += len(patches[p].With) - (patches[p].End - patches[p].Start)
			src = -1
		}
		add(size, src)
	}
	for i := 0; i < e.From; i++ {
		keep(i)
	}
	for _, ins := range e.Insert {
		add(len(ins), -1)
	}
	for i := e.To; i < len(r.Items); i++ {
		keep(i)
	}
	l.Array = [2]int{arr[0], at + 1}
	return l, nil
}

// Compose returns e, an edit of mid — the request a scan of
// ApplyPatches(base.Body, patches) made, item for item (patches replace
// values inside items; they add or remove none) —, as an edit of base:
// the same items replaced by the same Insert, and patches then e.Patches
// as patches of base's items kept, so that SpliceArray(base, …) writes
// in one pass what splicing the patched copy would. An item e.Patches
// edit becomes one patch of the whole item (its bytes in mid, e.Patches
// applied). It returns an error when mid is not base's item for item or
// a patch is not inside one item.
func Compose(base *Request, patches []Patch, mid *Request, e Edit) (Edit, error) {
	if len(base.Items) != len(mid.Items) {
		return Edit{}, fmt.Errorf("compose: %d items patched into %d", len(base.Items), len(mid.Items))
	}
	first, firstAt, err := checkEdit(base, Edit{From: 0, To: 0, Patches: patches})
	if err != nil {
		return Edit{}, fmt.Errorf("compose: %w", err)
	}
	then, thenAt, err := checkEdit(mid, e)
	if err != nil {
		return Edit{}, fmt.Errorf("compose: %w", err)
	}
	out := Edit{From: e.From, To: e.To, Insert: e.Insert}
	p, q := 0, 0
	for i := range base.Items {
		var mine, its []Patch
		for ; p < len(first) && firstAt[p] == i; p++ {
			mine = append(mine, first[p])
		}
		for ; q < len(then) && thenAt[q] == i; q++ {
			its = append(its, then[q])
		}
		if i >= e.From && i < e.To {
			continue // the item is replaced: its patches go with it
		}
		if len(its) == 0 {
			out.Patches = append(out.Patches, mine...)
			continue
		}
		it := mid.Items[i]
		var with []byte
		at := it.Start
		for _, t := range its {
			with = append(with, mid.Body[at:t.Start]...)
			with = append(with, t.With...)
			at = t.End
		}
		with = append(with, mid.Body[at:it.End]...)
		out.Patches = append(out.Patches, Patch{Start: base.Items[i].Start, End: base.Items[i].End, With: with})
	}
	return out, nil
}

// PatchLayout returns the layout of ApplyPatches(r.Body, patches) for
// patches sorted by Start, each inside one item of r: the items without
// a patch shifted, the patched ones changed. It returns ErrNotDerivable
// when a patch is not inside one item.
func PatchLayout(r *Request, patches []Patch) (Layout, error) {
	at, err := placePatches(r, patches)
	if err != nil {
		return Layout{}, fmt.Errorf("%w: %v", ErrNotDerivable, err)
	}
	l := Layout{Items: make([]Item, len(r.Items)), Src: make([]int, len(r.Items))}
	shift, p := 0, 0
	for i, old := range r.Items {
		it := Item{Start: old.Start + shift, Tokens: old.Tokens, Hash: old.Hash}
		l.Src[i] = i
		for ; p < len(patches) && at[p] == i; p++ {
			shift += len(patches[p].With) - (patches[p].End - patches[p].Start)
			it.Tokens, it.Hash, l.Src[i] = -1, 0, -1
		}
		it.End = old.End + shift
		l.Items[i] = it
	}
	l.Array = [2]int{r.Array[0], r.Array[1] + shift}
	return l, nil
}

// ItemTokens is the sum of the items' counts.
func (r *Request) ItemTokens() int {
	n := 0
	for _, it := range r.Items {
		n += it.Tokens
	}
	return n
}

// SameScan reports how derived differs from scanned, a Scan of the same
// body, in what the engine reads of a scanned request: the model, the
// total, the array, the head, the compaction and untouchable marks, and
// each item's span, count and hash (nil: no difference).
func SameScan(derived, scanned *Request) error {
	switch {
	case derived.Model != scanned.Model:
		return fmt.Errorf("model %q, scanned %q", derived.Model, scanned.Model)
	case derived.Total != scanned.Total:
		return fmt.Errorf("total %d, scanned %d", derived.Total, scanned.Total)
	case derived.Array != scanned.Array:
		return fmt.Errorf("array %v, scanned %v", derived.Array, scanned.Array)
	case derived.Head != scanned.Head:
		return fmt.Errorf("head %d, scanned %d", derived.Head, scanned.Head)
	case derived.Compaction != scanned.Compaction:
		return fmt.Errorf("compaction %q, scanned %q", derived.Compaction, scanned.Compaction)
	case derived.Untouchable != scanned.Untouchable:
		return fmt.Errorf("untouchable %q, scanned %q", derived.Untouchable, scanned.Untouchable)
	case len(derived.Items) != len(scanned.Items):
		return fmt.Errorf("%d items, scanned %d", len(derived.Items), len(scanned.Items))
	case string(derived.Body) != string(scanned.Body):
		return errors.New("bodies differ")
	}
	for i, d := range derived.Items {
		s := scanned.Items[i]
		if d.Start != s.Start || d.End != s.End || d.Tokens != s.Tokens || d.Hash != s.Hash {
			return fmt.Errorf("item %d: span [%d, %d) %d tokens hash %x, scanned [%d, %d) %d tokens hash %x",
				i, d.Start, d.End, d.Tokens, d.Hash, s.Start, s.End, s.Tokens, s.Hash)
		}
	}
	return nil
}

// ParsePatched sets the parse of out — the request a Scan of
// ApplyPatches(in.Body, patches) made, or Derive derived, item for item —
// from the parse of in: an item no patch touches keeps in's parse, its
// spans shifted to where it stands in out; the items the patches changed
// are parsed alone (parse, the codec's Parse, run on a request holding
// only them, each after the item before it) and keep in's role and glue,
// which a patch inside an item does not change. So a digested copy is
// parsed by reading only the outputs its digests replaced (and the items
// before them). It returns an error — and leaves out
// unparsed — when in is not parsed, out is not in item for item, a patch
// is not inside one item, or parse refuses an item alone or reads another
// role in it: the caller parses out whole then.
func ParsePatched(in, out *Request, patches []Patch, parse func(*Request) error) error {
	if !in.Parsed || len(in.Items) != len(out.Items) {
		return errors.New("parse patched: the request is not parsed, or not the patched one's item for item")
	}
	at, err := placePatches(in, sortedPatches(patches))
	if err != nil {
		return fmt.Errorf("parse patched: %w", err)
	}
	changed := slices.Compact(at)
	// Each changed item is parsed after the item before it, which a
	// codec may read to check it (a tool's result answers a call there:
	// Gemini's functionResponse); pos[k] is where changed[k] stands.
	alone := *out
	alone.Items, alone.Head, alone.Private, alone.Parsed = make([]Item, 0, 2*len(changed)), 0, nil, false
	pos := make([]int, len(changed))
	add := func(i int) {
		it := out.Items[i]
		alone.Items = append(alone.Items, Item{Start: it.Start, End: it.End, Tokens: it.Tokens, Hash: it.Hash})
	}
	for k, i := range changed {
		if i > 0 && (k == 0 || changed[k-1] != i-1) {
			add(i - 1)
		}
		pos[k] = len(alone.Items)
		add(i)
	}
	n := len(alone.Items)
	if err := parse(&alone); err != nil {
		return fmt.Errorf("parse patched: %w", err)
	}
	if len(alone.Items) != n {
		return errors.New("parse patched: the codec's parse changed the items")
	}
	for k, i := range changed {
		if alone.Items[pos[k]].Role != in.Items[i].Role {
			return fmt.Errorf("parse patched: item %d parsed alone as %q, in the request %q", i, alone.Items[pos[k]].Role, in.Items[i].Role)
		}
	}
	// The spans of the items after the first patch move: their calls
	// and outputs are copied, into one block each.
	var nc, no int
	for i := range out.Items {
		if out.Items[i].Start != in.Items[i].Start {
			nc += len(in.Items[i].Calls)
			no += len(in.Items[i].Outputs)
		}
	}
	calls, outputs := make([]Call, 0, nc), make([]Output, 0, no)
	k := 0
	for i := range out.Items {
		o := &out.Items[i]
		if k < len(changed) && changed[k] == i {
			p := alone.Items[pos[k]]
			p.Glue = in.Items[i].Glue
			*o = p
			k++
			continue
		}
		src := &in.Items[i]
		o.Role, o.Glue, o.Frozen, o.Answers, o.Calls, o.Outputs = src.Role, src.Glue, src.Frozen, src.Answers, src.Calls, src.Outputs
		if d := o.Start - src.Start; d != 0 {
			o.Calls, calls = shifted(calls, src.Calls, func(c *Call) {
				if c.ArgsSpan != ([2]int{}) {
					c.ArgsSpan[0] += d
					c.ArgsSpan[1] += d
				}
			})
			o.Outputs, outputs = shifted(outputs, src.Outputs, func(p *Output) { p.Start += d; p.End += d })
		}
	}
	out.Head, out.Parsed = in.Head, true
	return nil
}

// shifted appends src to block, moving each copy with move, and returns
// the copies (nil for none) and the block.
func shifted[T any](block, src []T, move func(*T)) ([]T, []T) {
	if len(src) == 0 {
		return src, block
	}
	n := len(block)
	block = append(block, src...)
	for i := n; i < len(block); i++ {
		move(&block[i])
	}
	return block[n:len(block):len(block)], block
}
