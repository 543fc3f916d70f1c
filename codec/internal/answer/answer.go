// Package answer holds what the codecs' view.Tools share: reading and
// writing single server-sent events of answer streams, appending a tool
// to a request's tools array, and the turn of an answer whose items are
// an array (reading it, keeping some of its calls, dropping others).
package answer

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	"github.com/condense-proxy/condense-proxy/view"
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
	// (data of several lines goes as several data lines, as it came)
	for {
		line, rest, more := bytes.Cut(data, []byte{'\n'})
		b.WriteString("data: ")
		b.Write(line)
		b.WriteByte('\n')
		if !more {
			break
		}
		data = rest
	}
	b.WriteByte('\n')
	return b.Bytes()
}

// End returns ev with the blank line that ends an event.
func End(ev []byte) []byte {
	out := make([]byte, 0, len(ev)+2)
	out = append(out, ev...)
	return append(out, '\n', '\n')
}

// Turn is an answer whose items are an array (Messages content blocks,
// Responses output items): the items, raw JSON, and the index among them
// of each of the answer's calls.
type Turn struct {
	Items []string
	Calls []int // Calls[i] is the index in Items of the answer's i-th call
}

// CallOf recognizes an item that is a call for the client to run.
type CallOf func(item gjson.Result) (view.ToolCall, bool)

// ReadItems reads the array at path of a JSON answer: every item, and
// the calls among them.
func ReadItems(body []byte, path string, callOf CallOf) view.Answer {
	t := &Turn{}
	a := view.Answer{Turn: t}
	gjson.GetBytes(body, path).ForEach(func(_, it gjson.Result) bool {
		if c, ok := callOf(it); ok {
			a.Calls = append(a.Calls, c)
			t.Calls = append(t.Calls, len(t.Items))
		}
		t.Items = append(t.Items, it.Raw)
		return true
	})
	return a
}

// Kept returns the turn's items less the calls of a (its answer) that
// keep refuses.
func (t *Turn) Kept(a view.Answer, keep func(int, view.ToolCall) bool) []string {
	dropped := map[int]bool{}
	for i, c := range a.Calls {
		if !keep(i, c) && i < len(t.Calls) {
			dropped[t.Calls[i]] = true
		}
	}
	var kept []string
	for i, it := range t.Items {
		if !dropped[i] {
			kept = append(kept, it)
		}
	}
	return kept
}

// DropCalls returns body with the calls drop selects removed from the
// array at path (body itself when none is), how many it removed and how
// many calls are left.
func DropCalls(body []byte, path string, callOf CallOf, drop func(view.ToolCall) bool) (out []byte, removed, left int, err error) {
	var kept []string
	gjson.GetBytes(body, path).ForEach(func(_, it gjson.Result) bool {
		if c, ok := callOf(it); ok {
			if drop(c) {
				removed++
				return true
			}
			left++
		}
		kept = append(kept, it.Raw)
		return true
	})
	if removed == 0 {
		return body, 0, left, nil
	}
	out, err = sjson.SetRawBytes(body, path, []byte("["+strings.Join(kept, ",")+"]"))
	return out, removed, left, err
}

// Release is view.AnswerStream's Release for a stream whose items carry
// their place in a field of each event's data (Messages' "index",
// Responses' "output_index"): the events of the calls drop accepts are
// left out, the items after them numbered on without a gap, and fix (nil:
// none) rewrites what is left of every other event's data (the answer's
// final state); left is whether calls remain. calls are the round's
// calls (Answer().Calls).
func Release(held []view.Held, calls []view.ToolCall, drop func(int, view.ToolCall) bool, field string, fix func(data []byte, left bool) []byte) []byte {
	dropped := make([]bool, len(calls))
	some, left := false, false
	for i, c := range calls {
		dropped[i] = drop(i, c)
		some = some || dropped[i]
		left = left || !dropped[i]
	}
	var out bytes.Buffer
	if !some {
		for _, h := range held {
			out.Write(h.Event)
		}
		return out.Bytes()
	}
	isDropped := func(h view.Held) bool { return h.Call >= 0 && h.Call < len(dropped) && dropped[h.Call] }
	// The places of the items left out.
	var gone []int64
	for _, h := range held {
		if !isDropped(h) {
			continue
		}
		_, data := Parse(bytes.TrimRight(h.Event, "\n"))
		if v := gjson.GetBytes(data, field); v.Exists() && !containsInt(gone, v.Int()) {
			gone = append(gone, v.Int())
		}
	}
	for _, h := range held {
		if isDropped(h) {
			continue
		}
		name, data := Parse(bytes.TrimRight(h.Event, "\n"))
		if data == nil || !gjson.ValidBytes(data) {
			out.Write(h.Event)
			continue
		}
		changed := data
		if v := gjson.GetBytes(data, field); v.Exists() {
			before := int64(0)
			for _, g := range gone {
				if g < v.Int() {
					before++
				}
			}
			if before > 0 {
				if b, err := sjson.SetBytes(changed, field, v.Int()-before); err == nil {
					changed = b
				}
			}
		}
		if fix != nil {
			changed = fix(changed, left)
		}
		if bytes.Equal(changed, data) {
			out.Write(h.Event)
			continue
		}
		out.Write(Format(name, changed))
	}
	return out.Bytes()
}

func containsInt(s []int64, v int64) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}
