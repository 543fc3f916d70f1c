package view

import "sort"

// SpliceArray returns r.Body with the array value at arr ([start, end),
// brackets included) rewritten as the items [0, e.From), e.Insert and the
// items from e.To on, joined by commas; every byte outside the array stays.
func SpliceArray(r *Request, arr [2]int, e Edit) []byte {
	n := arr[0] + 2 + (len(r.Body) - arr[1])
	for i, it := range r.Items {
		if i < e.From || i >= e.To {
			n += it.End - it.Start + 1
		}
	}
	for _, ins := range e.Insert {
		n += len(ins) + 1
	}
	out := make([]byte, 0, n)
	out = append(out, r.Body[:arr[0]]...)
	out = append(out, '[')
	first := true
	add := func(b []byte) {
		if !first {
			out = append(out, ',')
		}
		first = false
		out = append(out, b...)
	}
	for i := 0; i < e.From; i++ {
		add(r.Body[r.Items[i].Start:r.Items[i].End])
	}
	for _, ins := range e.Insert {
		add(ins)
	}
	for i := e.To; i < len(r.Items); i++ {
		add(r.Body[r.Items[i].Start:r.Items[i].End])
	}
	out = append(out, ']')
	return append(out, r.Body[arr[1]:]...)
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
	grow := 0
	for _, p := range patches {
		grow += len(p.With) - (p.End - p.Start)
	}
	out := make([]byte, 0, len(body)+max(grow, 0))
	at := 0
	for _, p := range patches {
		out = append(out, body[at:p.Start]...)
		out = append(out, p.With...)
		at = p.End
	}
	return append(out, body[at:]...)
}
