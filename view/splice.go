package view

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
