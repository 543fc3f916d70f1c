// Package textvalue is what the codecs share to let selective digest a
// value in place (selective.Codec): where an item's text is, whether a
// value holds plain text only, that text, and a replacement written as a
// JSON string. The three formats write a text value alike, as a string or
// an array of text parts; what differs (which outputs are frozen) is
// decided by each codec's Parse.
package textvalue

import (
	"strings"
	"unicode/utf8"

	"github.com/tidwall/gjson"

	"github.com/condense-proxy/condense-proxy/jsonscan"
)

// Content returns the span, within raw (an item's or a tool output's raw
// JSON object), of its "content" value (the last one when the key
// repeats); ok is false when raw is not an object or has none.
func Content(raw string) (start, end int, ok bool) {
	return jsonscan.FieldSpan(raw, "content")
}

// Editable reports whether value (raw JSON) is plain text a digest may
// replace: a string, or an array of text parts — of type "text",
// "input_text" or "output_text" (the spellings of chat completions,
// Messages and Responses) — none marked cache_control. A string is not
// decoded.
func Editable(value string) bool {
	if value == "" {
		return false
	}
	switch value[0] {
	case '"':
		return true
	case '[':
		ok := true
		gjson.Parse(value).ForEach(func(_, p gjson.Result) bool {
			if p.Get("cache_control").Exists() || !textPart(p.Get("type").Str) {
				ok = false
			}
			return ok
		})
		return ok
	}
	return false
}

func textPart(typ string) bool {
	return typ == "text" || typ == "input_text" || typ == "output_text"
}

// Text returns the text of an Editable value: the string, or the parts'
// texts joined by newlines.
func Text(value string) string {
	v := gjson.Parse(value)
	if v.Type == gjson.String {
		return v.Str
	}
	var parts []string
	v.ForEach(func(_, p gjson.Result) bool {
		parts = append(parts, p.Get("text").String())
		return true
	})
	return strings.Join(parts, "\n")
}

// safe marks the ASCII bytes String copies as they are: printable, not
// '"', '\\' nor one of HTML's '<', '>', '&'.
var safe = func() (t [utf8.RuneSelf]bool) {
	for c := byte(0x20); c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\' && c != '<' && c != '>' && c != '&'
	}
	return t
}()

// String renders text as a JSON string: the value that replaces an
// Editable one, or a tool call's arguments. Its bytes are encoding/json's
// (HTML characters, U+2028 and U+2029 escaped, invalid UTF-8 as U+FFFD),
// since forwarded bodies and the keys of cached digests depend on them,
// without json.Marshal's reflection and copy (FuzzString).
func String(text string) []byte {
	const hex = "0123456789abcdef"
	b := make([]byte, 0, len(text)+len(text)/32+2)
	b = append(b, '"')
	start := 0
	for i := 0; i < len(text); {
		c := text[i]
		if c < utf8.RuneSelf {
			if safe[c] {
				i++
				continue
			}
			b = append(b, text[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(text[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(b, text[start:i]...)
			b = append(b, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			b = append(b, text[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hex[r&0xF])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	b = append(b, text[start:]...)
	return append(b, '"')
}
