// Package field reads a field of a JSON object the codecs have scanned
// already (an item of a request whose body jsonscan validated, or a part
// of one) as gjson.Get reads it, without gjson's parse of the object:
// the object's values are skipped, not parsed, up to the field.
package field

import (
	"strings"

	"github.com/tidwall/gjson"

	"github.com/condense-proxy/condense-proxy/jsonscan"
)

// Get returns gjson.Get(obj, key) for obj a part of a body jsonscan
// validated and key a plain field name (no gjson path syntax: letters,
// digits, '_' or '-'): the value of the first field so named, or the
// empty Result when obj is not an object or has none.
func Get(obj, key string) gjson.Result {
	start, end, ok, escaped := jsonscan.FirstValid(obj, key)
	if escaped {
		// A key holding an escape may decode to key: gjson decides.
		return gjson.Get(obj, key)
	}
	if !ok {
		return gjson.Result{}
	}
	return valueOf(obj[start:end], start)
}

// GetAll sets out[j] to Get(obj, keys[j]) for each key, in one pass over
// obj (spans holds len(keys) spans, as scratch).
func GetAll(obj string, keys []string, spans [][2]int, out []gjson.Result) {
	if jsonscan.FirstsValid(obj, keys, spans) {
		// A key holding an escape may decode to one of keys: gjson
		// decides.
		for j, key := range keys {
			out[j] = gjson.Get(obj, key)
		}
		return
	}
	for j, sp := range spans {
		out[j] = gjson.Result{}
		if sp[1] > 0 {
			out[j] = valueOf(obj[sp[0]:sp[1]], sp[0])
		}
	}
}

// Str returns gjson.Parse(v).Str for v a JSON value of a body jsonscan
// validated: a string's text, "" for any other value.
func Str(v string) string {
	if s, ok := plain(v); ok {
		return s
	}
	return gjson.Parse(v).Str
}

// Plain returns the text of v when v is a JSON string without escapes
// (its text is then what is between its quotes).
func Plain(v string) (string, bool) { return plain(v) }

func plain(v string) (string, bool) {
	if len(v) < 2 || v[0] != '"' || strings.IndexByte(v, '\\') >= 0 {
		return "", false
	}
	return v[1 : len(v)-1], true
}

// Of is Get on the raw JSON of v, a value read from such a body.
func Of(v gjson.Result, key string) gjson.Result { return Get(v.Raw, key) }

// Each calls fn with each field of t, read from a body jsonscan
// validated, as t.ForEach does (the same keys and values, in order, until
// fn returns false), the object's values skipped rather than parsed up to
// each field. A t that is not an object goes to t.ForEach.
func Each(t gjson.Result, fn func(key, value gjson.Result) bool) {
	raw := t.Raw
	if t.Type != gjson.JSON || t.Indexes != nil || raw == "" || raw[0] != '{' {
		t.ForEach(fn)
		return
	}
	for i := 1; ; {
		k, v, next, ok := jsonscan.NextFieldValid(raw, i)
		if !ok {
			return
		}
		i = next
		key := gjson.Result{Type: gjson.String, Raw: raw[k[0]:k[1]], Str: Str(raw[k[0]:k[1]]), Index: k[0] + t.Index}
		if !fn(key, valueOf(raw[v[0]:v[1]], v[0]+t.Index)) {
			return
		}
	}
}

// Value returns gjson.Parse(v) for v a JSON value of a body jsonscan
// validated.
func Value(v string) gjson.Result { return valueOf(v, 0) }

// valueOf is the Result of v, a JSON value at index in its parent.
func valueOf(v string, index int) gjson.Result {
	if s, ok := plain(v); ok {
		return gjson.Result{Type: gjson.String, Raw: v, Str: s, Index: index}
	}
	r := gjson.Parse(v)
	r.Index = index
	return r
}
