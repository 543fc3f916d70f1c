// Package field reads a field of a JSON object the codecs have scanned
// already (an item of a request whose body jsonscan validated, or a part
// of one) as gjson.Get reads it, without gjson's parse of the object:
// the object's values are skipped, not parsed, up to the field.
package field

import (
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
	r := gjson.Parse(obj[start:end])
	r.Index = start
	return r
}

// Of is Get on the raw JSON of v, a value read from such a body.
func Of(v gjson.Result, key string) gjson.Result { return Get(v.Raw, key) }
