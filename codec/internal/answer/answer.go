// Package answer holds what the codecs' view.Tools share: reading and
// writing single server-sent events of answer streams, and appending a
// tool to a request's tools array.
package answer

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"
)

// AppendTool appends raw tool JSON to body's "tools" array (made when
// absent or null); ok is false when "tools" is something else.
func AppendTool(body []byte, tool string) (out []byte, ok bool, err error) {
	tools := gjson.GetBytes(body, "tools")
	switch {
	case !tools.Exists() || tools.Type == gjson.Null:
		out, err = sjson.SetRawBytes(body, "tools", []byte("["+tool+"]"))
	case tools.IsArray():
		out, err = sjson.SetRawBytes(body, "tools.-1", []byte(tool))
	default:
		return body, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("adding a tool: %w", err)
	}
	return out, true, nil
}

// Quote returns s as a JSON string.
func Quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// Parse returns an event's name (its "event:" field, "" when absent) and
// its data (the "data:" lines joined by newlines; nil when it has none:
// a comment or a bare event). ev is the event's lines without the blank
// line ending it.
func Parse(ev []byte) (name string, data []byte) {
	for len(ev) > 0 {
		line := ev
		if i := bytes.IndexByte(ev, '\n'); i >= 0 {
			line, ev = ev[:i], ev[i+1:]
		} else {
			ev = nil
		}
		line = bytes.TrimSuffix(line, []byte{'\r'})
		field, value, _ := bytes.Cut(line, []byte{':'})
		value = bytes.TrimPrefix(value, []byte{' '})
		switch string(field) {
		case "event":
			name = string(value)
		case "data":
			if data != nil {
				data = append(data, '\n')
			}
			data = append(data, value...)
		}
	}
	return name, data
}

// Format writes an event: its name (none when empty) and data, and the
// blank line that ends it.
func Format(name string, data []byte) []byte {
	var b bytes.Buffer
	if name != "" {
		b.WriteString("event: ")
		b.WriteString(name)
		b.WriteByte('\n')
	}
	b.WriteString("data: ")
	b.Write(data)
	b.WriteString("\n\n")
	return b.Bytes()
}

// End returns ev with the blank line that ends an event.
func End(ev []byte) []byte {
	out := make([]byte, 0, len(ev)+2)
	out = append(out, ev...)
	return append(out, '\n', '\n')
}
