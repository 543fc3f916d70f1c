// Package jsonscan validates JSON and finds where values are in the raw
// bytes, without decoding them: one pass over a request body checks that
// it is well formed and records the spans of the top-level fields, of the
// elements of one array field and of chosen fields of those elements
// (ScanObject), or of chosen fields of one object (FieldSpans). The
// callers — the codecs, which know their wire formats — name the keys;
// this package knows no field name of any format.
//
// Strings are scanned sixteen bytes at a time and nothing is allocated
// per value, so a body of megabytes is checked at memory speed.
package jsonscan

import (
	"encoding/binary"
	"math/bits"
	"strings"
	"unsafe"
)

// littleEndian selects str's direct word loads; elsewhere the bytes are
// assembled portably.
var littleEndian = binary.NativeEndian.Uint16([]byte{1, 0}) == 1

// Valid reports whether s is one well-formed JSON value (RFC 8259, with
// surrounding white space). It is a fast equivalent of encoding/json.Valid
// for the large, string-heavy bodies agents send: string contents are
// scanned eight bytes at a time.
func Valid(s string) bool {
	p := &validator{s: s}
	return p.run()
}

func (p *validator) run() bool {
	p.ws()
	if !p.value(0) {
		return false
	}
	p.ws()
	return p.i == len(p.s)
}

// maxDepth bounds nesting, as encoding/json does (10000).
const maxDepth = 10000

type validator struct {
	s string
	i int
	// onField, if set, gets each top-level field of the root object: the
	// key as written (quoted) and the span of its value.
	onField func(key string, start, end int)
	// fieldKeys (unquoted), if set, names top-level fields whose value
	// spans go to fieldSpans (the last occurrence of a repeated key):
	// FieldSpans' recording, without a closure to allocate.
	fieldKeys  []string
	fieldSpans [][2]int
	// arrayName is arrayKey unquoted (FieldSpansElems'); either is set.
	arrayName string
	// arrayKey (quoted), if set, names a top-level array field whose
	// element spans go to arrayElems (reset on a repeated key); onArray
	// gets the array's span.
	arrayKey   string
	arrayElems *[][2]int
	onArray    func(start, end int)
}

// isArrayKey reports whether key (quoted, as written) names the array
// whose elements are recorded.
func (p *validator) isArrayKey(key string) bool {
	if p.arrayKey != "" {
		return key == p.arrayKey
	}
	return p.arrayName != "" && len(key) == len(p.arrayName)+2 && key[1:len(key)-1] == p.arrayName
}

func (p *validator) ws() {
	for p.i < len(p.s) {
		switch p.s[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

func (p *validator) value(depth int) bool {
	if p.i >= len(p.s) || depth > maxDepth {
		return false
	}
	switch c := p.s[p.i]; {
	case c == '"':
		return p.str()
	case c == '{':
		p.i++
		p.ws()
		if p.i < len(p.s) && p.s[p.i] == '}' {
			p.i++
			return true
		}
		for {
			keyStart := p.i
			if p.i >= len(p.s) || p.s[p.i] != '"' || !p.str() {
				return false
			}
			key := p.s[keyStart:p.i]
			p.ws()
			if p.i >= len(p.s) || p.s[p.i] != ':' {
				return false
			}
			p.i++
			p.ws()
			valStart := p.i
			if depth == 0 && p.isArrayKey(key) && p.i < len(p.s) && p.s[p.i] == '[' {
				if !p.elements(depth+1, p.arrayElems) {
					return false
				}
				if p.onArray != nil {
					p.onArray(valStart, p.i)
				}
			} else if !p.value(depth + 1) {
				return false
			}
			if depth == 0 && p.fieldKeys != nil {
				for j, k := range p.fieldKeys {
					if len(key) == len(k)+2 && key[1:len(key)-1] == k {
						p.fieldSpans[j] = [2]int{valStart, p.i}
					}
				}
			}
			if depth == 0 && p.onField != nil {
				p.onField(key, valStart, p.i)
			}
			if done, ok := p.sep('}'); !ok || done {
				return ok
			}
		}
	case c == '[':
		return p.array(depth, nil)
	case c == 't':
		return p.lit("true")
	case c == 'f':
		return p.lit("false")
	case c == 'n':
		return p.lit("null")
	case c == '-' || (c >= '0' && c <= '9'):
		return p.num()
	}
	return false
}

// elements validates the array under arrayKey, recording each element's
// span in *elems (reset first: when the key repeats, the last array
// wins).
func (p *validator) elements(depth int, elems *[][2]int) bool {
	es := (*elems)[:0]
	ok := p.array(depth, func(start int) bool {
		ok := p.value(depth + 1)
		es = grow(es, 1)
		es[len(es)-1] = [2]int{start, p.i}
		return ok
	})
	*elems = es
	return ok
}

// ObjectFieldsValid sets fields[j] to the span of the value of the last
// field named keys[j] (compared as written) of obj, a part of a body Valid
// accepted ({0, 0}: absent). It returns how many fields obj has, and
// whether it writes one of keys twice or any key with an escape (which
// may decode to one of keys); isObject is false, and fields untouched,
// when obj is not an object.
func ObjectFieldsValid(obj string, keys []string, fields [][2]int) (n int, twice, isObject bool) {
	if obj == "" || obj[0] != '{' {
		return 0, false, false
	}
	for i := 1; ; n++ {
		k, v, next, ok := nextField(obj, i)
		if !ok {
			return n, twice, true
		}
		name := obj[k[0]+1 : k[1]-1]
		for j, key := range keys {
			if name == key {
				twice = twice || fields[j][1] != 0
				fields[j] = v
			}
		}
		twice = twice || hasBackslash(name)
		i = next
	}
}

// grow returns s with n zero spans appended. Its capacity doubles, where
// append's grows by a quarter past a few hundred elements: the spans of a
// request of 100,000 items are copied about once, not four times over.
func grow(s [][2]int, n int) [][2]int {
	if len(s)+n > cap(s) {
		t := make([][2]int, len(s), max(2*cap(s), len(s)+n, 64))
		copy(t, s)
		s = t
	}
	s = s[:len(s)+n]
	clear(s[len(s)-n:])
	return s
}

// array validates an array starting at '['. elem, if set, validates each
// element (starting at the given offset) in place of a plain value.
func (p *validator) array(depth int, elem func(start int) bool) bool {
	p.i++ // [
	p.ws()
	if p.i < len(p.s) && p.s[p.i] == ']' {
		p.i++
		return true
	}
	for {
		ok := false
		if elem != nil {
			ok = elem(p.i)
		} else {
			ok = p.value(depth + 1)
		}
		if !ok {
			return false
		}
		if done, ok := p.sep(']'); !ok || done {
			return ok
		}
	}
}

// sep consumes what follows a member of an object or array: the closing
// byte (done) or a comma and the white space after it. ok is false on
// anything else.
func (p *validator) sep(closing byte) (done, ok bool) {
	p.ws()
	if p.i >= len(p.s) {
		return false, false
	}
	switch p.s[p.i] {
	case closing:
		p.i++
		return true, true
	case ',':
		p.i++
		p.ws()
		return false, true
	}
	return false, false
}

func (p *validator) lit(w string) bool {
	if len(p.s)-p.i >= len(w) && p.s[p.i:p.i+len(w)] == w {
		p.i += len(w)
		return true
	}
	return false
}

func (p *validator) digits() bool {
	start := p.i
	for p.i < len(p.s) && p.s[p.i] >= '0' && p.s[p.i] <= '9' {
		p.i++
	}
	return p.i > start
}

func (p *validator) num() bool {
	if p.s[p.i] == '-' {
		p.i++
	}
	if p.i >= len(p.s) {
		return false
	}
	if p.s[p.i] == '0' {
		p.i++
	} else if !p.digits() {
		return false
	}
	if p.i < len(p.s) && p.s[p.i] == '.' {
		p.i++
		if !p.digits() {
			return false
		}
	}
	if p.i < len(p.s) && (p.s[p.i] == 'e' || p.s[p.i] == 'E') {
		p.i++
		if p.i < len(p.s) && (p.s[p.i] == '+' || p.s[p.i] == '-') {
			p.i++
		}
		if !p.digits() {
			return false
		}
	}
	return true
}

const (
	lsb = 0x0101010101010101
	msb = 0x8080808080808080
)

// special returns a word whose high bit is set in each byte of w that is
// '"', '\\' or a control character (< 0x20).
func special(w uint64) uint64 {
	quote := w ^ (lsb * '"')
	bslash := w ^ (lsb * '\\')
	// A byte is zero in x exactly when (x - 1) & ^x has its high bit set;
	// the borrow can only mark bytes above a true zero, which is fine for
	// finding the first one.
	z := ((quote - lsb) &^ quote) | ((bslash - lsb) &^ bslash) | ((w - lsb*0x20) &^ w)
	return z & msb
}

// str validates a string starting at the opening quote (UTF-8 is not
// checked: invalid bytes are replaced when tokenized, as JSON decoders do).
// The contents are scanned sixteen bytes at a time for the next quote,
// backslash or control character; an escape is checked and skipped
// without leaving the scan.
func (p *validator) str() bool {
	s := p.s
	n := len(s)
	i := p.i + 1 // after the opening quote
	base := unsafe.Pointer(unsafe.StringData(s))
	for {
		// The loads stay inside s (i+16 <= n). special marks only true
		// matches up to and including the first one, which is all that
		// is read of the mask.
		if littleEndian {
			for i+16 <= n {
				if m := special(*(*uint64)(unsafe.Add(base, i))); m != 0 {
					i += bits.TrailingZeros64(m) / 8
					goto found
				}
				if m := special(*(*uint64)(unsafe.Add(base, i+8))); m != 0 {
					i += 8 + bits.TrailingZeros64(m)/8
					goto found
				}
				i += 16
			}
		}
		for i < n {
			if c := s[i]; c == '"' || c == '\\' || c < 0x20 {
				break
			}
			i++
		}
	found:
		if i >= n {
			p.i = i
			return false
		}
		switch s[i] {
		case '"':
			p.i = i + 1
			return true
		case '\\':
			if i+1 >= n {
				p.i = i + 1
				return false
			}
			switch s[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if i+6 > n || !hex4(s[i+2:i+6]) {
					p.i = i + 1
					return false
				}
				i += 6
			default:
				p.i = i + 1
				return false
			}
		default: // a control character
			p.i = i
			return false
		}
	}
}

// hex4 reports whether the four bytes of h are hexadecimal digits.
func hex4(h string) bool {
	for i := 0; i < 4; i++ {
		c := h[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
			return false
		}
	}
	return true
}

// FieldSpan finds key among the top-level fields of the JSON object obj
// and returns the [start, end) span of its raw value, without decoding
// anything. ok is false when obj is not a well-formed object or has no
// such key (the last occurrence wins when a key repeats).
func FieldSpan(obj, key string) (start, end int, ok bool) {
	var sp [1][2]int
	if !FieldSpans(obj, []string{key}, sp[:]) || sp[0][1] == 0 {
		return 0, 0, false
	}
	return sp[0][0], sp[0][1], true
}

// FieldSpans is FieldSpan for several keys in one pass: spans[i] gets the
// span of keys[i] ({0, 0} when absent). It reports whether obj is a
// well-formed object.
func FieldSpans(obj string, keys []string, spans [][2]int) bool {
	return FieldSpansElems(obj, keys, spans, "", nil)
}

// FieldSpansElems is FieldSpans that, in the same pass, sets *elems to the
// spans of the elements of the array under arrayKey (nil when that value
// is absent or not an array).
func FieldSpansElems(obj string, keys []string, spans [][2]int, arrayKey string, elems *[][2]int) bool {
	return fieldSpansElems(obj, keys, spans, arrayKey, elems, false)
}

// FieldSpansValid is FieldSpans for a part of a body Valid accepted (an
// item of a scanned request, a block of an item): its strings are
// skipped to their closing quote, not validated again. On anything else
// its spans are undefined.
func FieldSpansValid(obj string, keys []string, spans [][2]int) bool {
	return fieldSpansElems(obj, keys, spans, "", nil, true)
}

// FieldSpansElemsValid is FieldSpansElems for a part of a body Valid
// accepted, as FieldSpansValid.
func FieldSpansElemsValid(obj string, keys []string, spans [][2]int, arrayKey string, elems *[][2]int) bool {
	return fieldSpansElems(obj, keys, spans, arrayKey, elems, true)
}

func fieldSpansElems(obj string, keys []string, spans [][2]int, arrayKey string, elems *[][2]int, valid bool) bool {
	if elems != nil {
		*elems = (*elems)[:0]
	}
	for i := range spans {
		spans[i] = [2]int{}
	}
	if valid {
		return fieldSpansSkipping(obj, keys, spans, arrayKey, elems)
	}
	p := &validator{s: obj, fieldKeys: keys, fieldSpans: spans}
	if arrayKey != "" && elems != nil {
		p.arrayName, p.arrayElems = arrayKey, elems
	}
	p.ws()
	if p.i >= len(obj) || obj[p.i] != '{' {
		return false
	}
	return p.run()
}

// fieldSpansSkipping is fieldSpansElems for valid JSON: field by field,
// each value skipped (nextField), the elements of the array under
// arrayKey read the same way.
func fieldSpansSkipping(obj string, keys []string, spans [][2]int, arrayKey string, elems *[][2]int) bool {
	i := skipWS(obj, 0)
	if i >= len(obj) || obj[i] != '{' {
		return false
	}
	for i++; ; {
		k, v, next, ok := nextField(obj, i)
		if !ok {
			break
		}
		name := obj[k[0]+1 : k[1]-1]
		for j, key := range keys {
			if name == key {
				spans[j] = v
			}
		}
		if elems != nil && arrayKey != "" && name == arrayKey && obj[v[0]] == '[' {
			// The last array under the key wins.
			*elems = arrayElems(obj, v[0], (*elems)[:0])
		}
		i = next
	}
	// The object's end, then nothing but white space.
	if i = skipWS(obj, i); i >= len(obj) || obj[i] != '}' {
		return false
	}
	return skipWS(obj, i+1) == len(obj)
}

// ArrayElemsValid appends to es the spans of the elements of arr, an
// array of a body Valid accepted.
func ArrayElemsValid(arr string, es [][2]int) [][2]int {
	if arr == "" || arr[0] != '[' {
		return es
	}
	return arrayElems(arr, 0, es)
}

// arrayElems appends to es the spans of the elements of the valid array
// that starts at s[i].
func arrayElems(s string, i int, es [][2]int) [][2]int {
	i = skipWS(s, i+1)
	if i < len(s) && s[i] == ']' {
		return es
	}
	for i < len(s) {
		end := skipValue(s, i)
		es = grow(es, 1)
		es[len(es)-1] = [2]int{i, end}
		if i = skipWS(s, end); i >= len(s) || s[i] != ',' {
			break
		}
		i = skipWS(s, i+1)
	}
	return es
}

// FirstValid finds the first top-level field of obj named key (compared
// as written, unquoted) and returns the span of its value, obj being a
// part of a body Valid accepted: its values are skipped, not checked. It
// stops at the first key holding an escape, which may decode to key:
// escaped is then true, and a caller that needs a decoder's answer asks
// one. ok is false when obj is not an object, or has no such field
// (before such a key).
func FirstValid(obj, key string) (start, end int, ok, escaped bool) {
	i := skipWS(obj, 0)
	if i >= len(obj) || obj[i] != '{' {
		return 0, 0, false, false
	}
	for i++; ; {
		k, v, next, ok := nextField(obj, i)
		if !ok {
			return 0, 0, false, false
		}
		name := obj[k[0]+1 : k[1]-1]
		if hasBackslash(name) {
			return 0, 0, false, true
		}
		if name == key {
			return v[0], v[1], true, false
		}
		i = next
	}
}

// FirstsValid is FirstValid for several keys in one pass: spans[j] gets
// the span of the first field named keys[j] ({0, 0}: none before the
// object's end, or before a key holding an escape, which sets escaped).
func FirstsValid(obj string, keys []string, spans [][2]int) (escaped bool) {
	clear(spans)
	i := skipWS(obj, 0)
	if i >= len(obj) || obj[i] != '{' {
		return false
	}
	for i, left := i+1, len(keys); left > 0; {
		k, v, next, ok := nextField(obj, i)
		if !ok {
			return false
		}
		name := obj[k[0]+1 : k[1]-1]
		if hasBackslash(name) {
			return true
		}
		for j, key := range keys {
			if name == key && spans[j][1] == 0 {
				spans[j] = v
				left--
			}
		}
		i = next
	}
	return false
}

// NextFieldValid reads the field of obj, a part of a body Valid accepted,
// that starts at i — just after the object's '{', or where the previous
// field's value ended — and returns the spans of its key (quotes
// included) and of its value, and where it ends. ok is false at the
// object's end.
func NextFieldValid(obj string, i int) (key, value [2]int, next int, ok bool) {
	return nextField(obj, i)
}

func nextField(s string, i int) (key, value [2]int, next int, ok bool) {
	i = skipWS(s, i)
	if i < len(s) && s[i] == ',' {
		i = skipWS(s, i+1)
	}
	if i >= len(s) || s[i] != '"' {
		return key, value, i, false
	}
	key = [2]int{i, skipString(s, i)}
	i = skipWS(s, key[1])
	if i >= len(s) || s[i] != ':' {
		return key, value, i, false
	}
	i = skipWS(s, i+1)
	if i >= len(s) {
		return key, value, i, false
	}
	value = [2]int{i, skipValue(s, i)}
	return key, value, value[1], true
}

func skipWS(s string, i int) int {
	for i < len(s) && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r') {
		i++
	}
	return i
}

func hasBackslash(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' {
			return true
		}
	}
	return false
}

// skipValue returns the end of the value of valid JSON that starts at
// s[i].
func skipValue(s string, i int) int {
	switch s[i] {
	case '"':
		return skipString(s, i)
	case '{', '[':
		depth := 0
		for i < len(s) {
			switch s[i] {
			case '"':
				i = skipString(s, i)
				continue
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return i + 1
				}
			}
			i++
		}
		return i
	}
	// A number or a literal: up to what follows a value.
	for i < len(s) {
		switch s[i] {
		case ',', '}', ']', ' ', '\t', '\n', '\r':
			return i
		}
		i++
	}
	return i
}

// skipString returns the end of the valid JSON string that starts at
// s[i] (after its closing quote). Its first bytes are read eight at a
// time for a quote or a backslash (most strings are short); past them,
// from quote to quote (IndexByte), a quote closing the string when an
// even number of backslashes precede it.
func skipString(s string, i int) int {
	start := i
	i++
	n := len(s)
	if littleEndian {
		base := unsafe.Pointer(unsafe.StringData(s))
		for short := min(n, i+64); i+8 <= short; {
			w := *(*uint64)(unsafe.Add(base, i))
			quote, bslash := w^(lsb*'"'), w^(lsb*'\\')
			// The first byte marked is a quote or a backslash (see
			// special).
			m := ((quote - lsb) &^ quote) | ((bslash - lsb) &^ bslash)
			if m &= msb; m == 0 {
				i += 8
				continue
			}
			i += bits.TrailingZeros64(m) / 8
			if s[i] == '"' {
				return i + 1
			}
			i += 2 // the backslash and what it escapes
		}
	}
	for short := min(n, i+8); i < short; {
		switch s[i] {
		case '"':
			return i + 1
		case '\\':
			i += 2
		default:
			i++
		}
	}
	for i < n {
		j := strings.IndexByte(s[i:], '"')
		if j < 0 {
			return n
		}
		i += j
		k := i - 1
		for k > start && s[k] == '\\' {
			k--
		}
		if (i-1-k)%2 == 0 {
			return i + 1
		}
		i++
	}
	return n
}
