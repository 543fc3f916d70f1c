package jsonscan

import (
	"strings"
	"unsafe"
)

// Object is what ScanObject learns of a JSON object: its top-level
// fields, the elements of one array field and chosen fields of those
// elements.
type Object struct {
	// Fields are the top-level fields, in order, keys as written (quotes
	// included).
	Fields []Field
	// Array is the span of the scanned array field's value, brackets
	// included ({0, 0}: absent or not an array).
	Array [2]int
	// Elements are the spans of that array's elements.
	Elements [][2]int
	// ElementFields are, for each element in turn, the spans of the
	// values of the element keys ScanObject was given, relative to the
	// element's start ({0, 0}: absent, or the element is not an object):
	// element i's are ElementFields[i*k : (i+1)*k] for k keys.
	ElementFields [][2]int
	// ElementKeysOnce: no element writes one of those keys twice, nor
	// any key with an escape, so each recorded span is also its key's
	// first occurrence (what a reader taking the first, as gjson does,
	// reads).
	ElementKeysOnce bool
	// EscapedKey: a top-level key holds an escape, so it may decode to a
	// key the scan looks for; callers should not read such a body.
	EscapedKey bool
}

// Field is one top-level field of an Object.
type Field struct {
	Key        string // as written, quotes included
	Start, End int    // span of the value
}

// Get returns the span of the value of key (unquoted) — the last
// occurrence when a key repeats, as JSON decoders take it — and whether it
// is present.
func (o *Object) Get(key string) ([2]int, bool) {
	for i := len(o.Fields) - 1; i >= 0; i-- {
		f := o.Fields[i]
		if len(f.Key) == len(key)+2 && f.Key[1:len(f.Key)-1] == key {
			return [2]int{f.Start, f.End}, true
		}
	}
	return [2]int{}, false
}

// ScanObject validates body (one well-formed JSON value, as Valid) and,
// when it is an object, records its top-level fields and the elements of
// the array under arrayKey (the last occurrence when the key repeats),
// and of those elements' fields named elemKeys (ElementFields). ok is
// false when body is not a well-formed JSON object.
func ScanObject(body []byte, arrayKey string, elemKeys ...string) (obj Object, ok bool) {
	s := unsafe.String(unsafe.SliceData(body), len(body))
	quoted := `"` + arrayKey + `"`
	p := &validator{s: s}
	p.onField = func(key string, start, end int) {
		obj.Fields = append(obj.Fields, Field{Key: key, Start: start, End: end})
		if strings.IndexByte(key, '\\') >= 0 {
			obj.EscapedKey = true
		}
	}
	p.arrayKey, p.arrayElems = quoted, &obj.Elements
	p.onArray = func(start, end int) { obj.Array = [2]int{start, end} }
	p.ws()
	if p.i >= len(s) || s[p.i] != '{' {
		return Object{}, false
	}
	if !p.run() {
		return Object{}, false
	}
	if k := len(elemKeys); k > 0 {
		// The elements' fields, read once the body is known valid (the
		// elements counted: their spans in one slice of the size they
		// need).
		obj.ElementFields = make([][2]int, len(obj.Elements)*k)
		obj.ElementKeysOnce = true
		for i, e := range obj.Elements {
			if _, twice, _ := ObjectFieldsValid(s[e[0]:e[1]], elemKeys, obj.ElementFields[i*k:(i+1)*k]); twice {
				obj.ElementKeysOnce = false
			}
		}
	}
	return obj, true
}
