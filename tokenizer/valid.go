package tokenizer

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

// chatScan is what one validating pass learns of a chat request: where
// each element of the top-level messages array is, and where the tools
// and functions values are.
type chatScan struct {
	valid, object, hasMessages bool
	messages                   [][2]int // [start, end) of each element
	fields                     []MessageFields
	tools, functions           [2]int // [start, end) of the value, or zero
	model                      [2]int // [start, end) of the model value, or zero
	array                      [2]int // [start, end) of the messages array, brackets included
	// escapedKey: a top-level key holds an escape, so it may decode to a
	// key the scan looks for ("mess\u0061ges"); such a body is not read.
	escapedKey bool
}

// MessageFields are the spans of a message's main fields, relative to the
// message's own start ({0, 0}: absent).
type MessageFields struct {
	Role, Content, ToolCallID, ToolCalls [2]int
}

// scanChat validates s and records the spans of a chat request's parts,
// so the caller needs no second parse.
func scanChat(s string) chatScan {
	p := &validator{s: s, scan: &chatScan{}}
	p.scan.valid = p.run()
	return *p.scan
}

// maxDepth bounds nesting, as encoding/json does (10000).
const maxDepth = 10000

type validator struct {
	s      string
	i      int
	scan   *chatScan      // nil: validate only
	cur    *MessageFields // the message being scanned, while in messages
	curAt  int            // its start
	fields MessageFields  // what cur points to
	// onField, if set, gets each top-level field of the root object: the
	// key as written (quoted) and the span of its value.
	onField func(key string, start, end int)
	// arrayKey (quoted), if set, names a top-level array field whose
	// element spans go to arrayElems (reset on a repeated key); onArray
	// gets the array's span.
	arrayKey   string
	arrayElems *[][2]int
	onArray    func(start, end int)
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
		if depth == 0 && p.scan != nil {
			p.scan.object = true
		}
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
			cur := p.cur
			if depth == 2 && cur != nil {
				p.cur = nil // nested objects are not messages
			}
			if depth == 0 && p.scan != nil && key == `"messages"` && p.i < len(p.s) && p.s[p.i] == '[' {
				if !p.elements(depth + 1) {
					return false
				}
				p.scan.array = [2]int{valStart, p.i}
			} else if depth == 0 && p.arrayKey != "" && key == p.arrayKey && p.i < len(p.s) && p.s[p.i] == '[' {
				elems := (*p.arrayElems)[:0]
				if !p.array(depth+1, func(start int) bool {
					ok := p.value(depth + 2)
					elems = append(elems, [2]int{start, p.i})
					return ok
				}) {
					return false
				}
				*p.arrayElems = elems
				p.onArray(valStart, p.i)
			} else if !p.value(depth + 1) {
				return false
			}
			if depth == 2 && cur != nil {
				p.cur = cur
				sp := [2]int{valStart - p.curAt, p.i - p.curAt}
				switch key {
				case `"role"`:
					cur.Role = sp
				case `"content"`:
					cur.Content = sp
				case `"tool_call_id"`:
					cur.ToolCallID = sp
				case `"tool_calls"`:
					cur.ToolCalls = sp
				}
			}
			if depth == 0 && p.onField != nil {
				p.onField(key, valStart, p.i)
			}
			if depth == 0 && p.scan != nil {
				if strings.IndexByte(key, '\\') >= 0 {
					p.scan.escapedKey = true
				}
				switch key {
				case `"tools"`:
					p.scan.tools = [2]int{valStart, p.i}
				case `"functions"`:
					p.scan.functions = [2]int{valStart, p.i}
				case `"model"`:
					p.scan.model = [2]int{valStart, p.i}
				}
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

// elements validates the messages array, recording each element's span
// and main fields.
func (p *validator) elements(depth int) bool {
	sc := p.scan
	sc.hasMessages = true
	sc.messages = sc.messages[:0]
	sc.fields = sc.fields[:0]
	return p.array(depth, func(start int) bool {
		p.fields = MessageFields{} // in p: one message at a time, nothing allocated per message
		p.cur, p.curAt = &p.fields, start
		ok := p.value(depth + 1)
		p.cur = nil
		if ok {
			sc.messages = append(sc.messages, [2]int{start, p.i})
			sc.fields = append(sc.fields, p.fields)
		}
		return ok
	})
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
	if elems != nil {
		*elems = (*elems)[:0]
	}
	for i := range spans {
		spans[i] = [2]int{}
	}
	p := &validator{s: obj, onField: func(key string, start, end int) {
		for i, k := range keys {
			if len(key) == len(k)+2 && key[1:len(key)-1] == k {
				spans[i] = [2]int{start, end}
			}
		}
	}}
	if arrayKey != "" && elems != nil {
		p.arrayKey, p.arrayElems = `"`+arrayKey+`"`, elems
		p.onArray = func(int, int) {}
	}
	p.ws()
	if p.i >= len(obj) || obj[p.i] != '{' {
		return false
	}
	return p.run()
}
