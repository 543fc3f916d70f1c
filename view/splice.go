package view

import (
	"bytes"
	"fmt"
	"sort"
)

// The bytes SpliceArray writes around and between items (only read).
var leftBracket, rightBracket, itemComma = []byte("["), []byte("]"), []byte(",")

// SpliceArray returns r.Body with the array value at arr ([start, end),
// brackets included) rewritten as the items [0, e.From), e.Insert and the
// items from e.To on, joined by commas, e.Patches applied to the items
// kept: every byte outside the array stays, and the body is written in
// one pass. It returns an error, and no body, when e's items are out of
// range or a patch is not inside one item of r.
func SpliceArray(r *Request, arr [2]int, e Edit) ([]byte, error) {
	if arr[0] < 0 || arr[0] >= arr[1] || arr[1] > len(r.Body) {
		return nil, fmt.Errorf("splice: array [%d, %d) not in a body of %d bytes", arr[0], arr[1], len(r.Body))
	}
	patches, items, err := checkEdit(r, e)
	if err != nil {
		return nil, err
	}
	// The pieces of the body, joined once (bytes.Join writes into memory
	// it does not clear first).
	pieces := make([][]byte, 0, 2*len(r.Items)+2*len(patches)+len(e.Insert)+3)
	pieces = append(pieces, r.Body[:arr[0]], leftBracket)
	first := true
	comma := func() {
		if !first {
			pieces = append(pieces, itemComma)
		}
		first = false
	}
	p := 0
	add := func(i int) {
		comma()
		it := r.Items[i]
		for p < len(patches) && items[p] < i {
			p++ // inside an item replaced
		}
		at := it.Start
		for ; p < len(patches) && items[p] == i; p++ {
			pieces = append(pieces, r.Body[at:patches[p].Start], patches[p].With)
			at = patches[p].End
		}
		pieces = append(pieces, r.Body[at:it.End])
	}
	for i := 0; i < e.From; i++ {
		add(i)
	}
	for _, ins := range e.Insert {
		comma()
		pieces = append(pieces, ins)
	}
	for i := e.To; i < len(r.Items); i++ {
		add(i)
	}
	pieces = append(pieces, rightBracket, r.Body[arr[1]:])
	return bytes.Join(pieces, nil), nil
}

// Patch replaces the bytes [Start, End) of a request's Body by With: an
// edit inside an item (a tool output's value replaced by its digest, a
// tool call's arguments shortened).
type Patch struct {
	Start, End int
	With       []byte
}

// ApplyPatches returns body with patches applied in one pass; body is not
// modified. The patches must not overlap; they are sorted by Start in
// place.
func ApplyPatches(body []byte, patches []Patch) []byte {
	sort.Slice(patches, func(i, j int) bool { return patches[i].Start < patches[j].Start })
	// bytes.Join writes the pieces into memory it does not clear first:
	// a body is a megabyte, every byte of it written here.
	pieces := make([][]byte, 0, 2*len(patches)+1)
	at := 0
	for _, p := range patches {
		pieces = append(pieces, body[at:p.Start], p.With)
		at = p.End
	}
	return bytes.Join(append(pieces, body[at:]), nil)
}

// checkEdit returns e's patches sorted by Start and the item of r each
// is inside, or an error when e is not an edit of r's items: its range
// out of [0, len(r.Items)], or a patch that is not inside one item of r
// (patches must not straddle an item's boundaries, nor overlap).
func checkEdit(r *Request, e Edit) ([]Patch, []int, error) {
	if e.From < 0 || e.From > e.To || e.To > len(r.Items) {
		return nil, nil, fmt.Errorf("splice: items [%d, %d) of %d", e.From, e.To, len(r.Items))
	}
	patches := sortedPatches(e.Patches)
	items, err := placePatches(r, patches)
	if err != nil {
		return nil, nil, fmt.Errorf("splice: %w", err)
	}
	return patches, items, nil
}

// placePatches returns the item of r each of patches (sorted by Start)
// is inside, or an error when one is not inside an item or overlaps the
// one before.
func placePatches(r *Request, patches []Patch) ([]int, error) {
	if len(patches) == 0 {
		return nil, nil
	}
	at := make([]int, len(patches))
	i := 0
	for k, p := range patches {
		if p.Start < 0 || p.End < p.Start || p.End > len(r.Body) {
			return nil, fmt.Errorf("patch [%d, %d) of a body of %d bytes", p.Start, p.End, len(r.Body))
		}
		if k > 0 && p.Start < patches[k-1].End {
			return nil, fmt.Errorf("patch [%d, %d) overlaps the one before", p.Start, p.End)
		}
		for i < len(r.Items) && r.Items[i].End < p.End {
			i++
		}
		if i == len(r.Items) || r.Items[i].Start > p.Start {
			return nil, fmt.Errorf("patch [%d, %d) not inside one item", p.Start, p.End)
		}
		at[k] = i
	}
	return at, nil
}

// sortedPatches returns patches sorted by Start: patches itself when it
// is, a sorted copy otherwise (the caller's slice is not reordered).
func sortedPatches(patches []Patch) []Patch {
	if sort.SliceIsSorted(patches, func(i, j int) bool { return patches[i].Start < patches[j].Start }) {
		return patches
	}
	s := append([]Patch(nil), patches...)
	sort.SliceStable(s, func(i, j int) bool { return s[i].Start < s[j].Start })
	return s
}
