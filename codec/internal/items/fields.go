package items

import "github.com/condense-proxy/condense-proxy/jsonscan"

// Fields are the spans of chosen fields of a scanned request's elements,
// found in the pass that hashes them (jsonscan.ObjectFieldsValid), so
// that counting, Parse and Text need not look for them again.
type Fields struct {
	keys  []string
	spans [][2]int // len(keys) an element
	flags []uint8  // an element's: isObject, exact, only
}

const (
	isObject = 1 << iota
	exact
	only
)

// Element is what the scan found of one element's fields.
type Element struct {
	// Spans are the spans of the last occurrence of each key, relative
	// to the element's start ({0, 0}: absent).
	Spans [][2]int
	// Object: the element is an object (otherwise Spans are empty).
	Object bool
	// Exact: an object that writes none of the keys twice, nor any key
	// with an escape: each span is also its key's first occurrence.
	Exact bool
	// Only: Exact, and the object has no other field.
	Only bool
}

// newFields returns the Fields of keys of n elements, each read by read.
func newFields(keys []string, n int) *Fields {
	return &Fields{keys: keys, spans: make([][2]int, n*len(keys)), flags: make([]uint8, n)}
}

// read finds the fields of element i, raw its JSON.
func (f *Fields) read(i int, raw string) {
	sp := f.spans[i*len(f.keys) : (i+1)*len(f.keys)]
	n, twice, obj := jsonscan.ObjectFieldsValid(raw, f.keys, sp)
	if !obj {
		return
	}
	fl := uint8(isObject)
	if !twice {
		fl |= exact
		present := 0
		for _, s := range sp {
			if s[1] > 0 {
				present++
			}
		}
		if n == present {
			fl |= only
		}
	}
	f.flags[i] = fl
}

// Element returns what the scan found of element i; the zero Element
// when f is nil or has no such element (a derived request's new items).
func (f *Fields) Element(i int) Element {
	if f == nil || i < 0 || i >= len(f.flags) {
		return Element{}
	}
	fl := f.flags[i]
	return Element{Spans: f.spans[i*len(f.keys) : (i+1)*len(f.keys)], Object: fl&isObject != 0, Exact: fl&exact != 0, Only: fl&only != 0}
}
