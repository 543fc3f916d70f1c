package chat

import "github.com/condense-proxy/condense-proxy/codec/internal/textvalue"

// TextSpan, Editable, ValueText and TextValue implement selective.Codec:
// selective digests a tool output (or an item's own text) in place
// through them, knowing no field of the format.

// TextSpan returns the span, within raw (an item's raw JSON, or a tool
// output's), of the value holding its own text: its "content".
func (*Codec) TextSpan(raw string) (start, end int, ok bool) { return textvalue.Content(raw) }

// Editable reports whether a digest may replace value (raw JSON): a
// string, or text parts none marked cache_control.
func (*Codec) Editable(value string) bool { return textvalue.Editable(value) }

// ValueText returns the text of an editable value.
func (*Codec) ValueText(value string) string { return textvalue.Text(value) }

// TextValue renders text as the value that replaces an editable one (or a
// tool call's arguments): a JSON string.
func (*Codec) TextValue(text string) []byte { return textvalue.String(text) }
