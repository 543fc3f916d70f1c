package view

import (
	"errors"
	"fmt"
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
// items shifted, the inserted ones new.
func SpliceLayout(r *Request, arr [2]int, e Edit) Layout {
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
	for i := 0; i < e.From; i++ {
		add(r.Items[i].End-r.Items[i].Start, i)
	}
	for _, ins := range e.Insert {
		add(len(ins), -1)
	}
	for i := e.To; i < len(r.Items); i++ {
		add(r.Items[i].End-r.Items[i].Start, i)
	}
	l.Array = [2]int{arr[0], at + 1}
	return l
}

// PatchLayout returns the layout of ApplyPatches(r.Body, patches) for
// patches sorted by Start, each inside one item of r: the items without
// a patch shifted, the patched ones changed. It returns ErrNotDerivable
// when a patch is not inside one item.
func PatchLayout(r *Request, patches []Patch) (Layout, error) {
	l := Layout{Items: make([]Item, len(r.Items)), Src: make([]int, len(r.Items))}
	shift, p := 0, 0
	for i, old := range r.Items {
		it := Item{Start: old.Start + shift, Tokens: old.Tokens, Hash: old.Hash}
		l.Src[i] = i
		for ; p < len(patches) && patches[p].Start < old.End; p++ {
			pt := patches[p]
			if pt.Start < old.Start || pt.End > old.End || pt.End < pt.Start || (p > 0 && pt.Start < patches[p-1].End) {
				return Layout{}, fmt.Errorf("%w: patch [%d, %d) not inside item %d [%d, %d)", ErrNotDerivable, pt.Start, pt.End, i, old.Start, old.End)
			}
			shift += len(pt.With) - (pt.End - pt.Start)
			it.Tokens, it.Hash, l.Src[i] = -1, 0, -1
		}
		it.End = old.End + shift
		l.Items[i] = it
	}
	if p < len(patches) {
		return Layout{}, fmt.Errorf("%w: patch at %d after the items", ErrNotDerivable, patches[p].Start)
	}
	if len(r.Items) == 0 && len(patches) > 0 {
		return Layout{}, fmt.Errorf("%w: no items", ErrNotDerivable)
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
