package answer

import (
	"bytes"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/condense-proxy/condense-proxy/view"
)

func callOf(it gjson.Result) (view.ToolCall, bool) {
	if it.Get("type").String() != "call" {
		return view.ToolCall{}, false
	}
	return view.ToolCall{ID: it.Get("id").String(), Name: it.Get("name").String()}, true
}

// TestTurnItems: an answer's items are read with their calls in place;
// Kept leaves out exactly the calls keep refuses; DropCalls removes the
// calls drop selects and counts what it removed and what is left.
func TestTurnItems(t *testing.T) {
	body := []byte(`{"out":[{"type":"text","t":"a"},{"type":"call","id":"1","name":"recall"},{"type":"text","t":"b"},{"type":"call","id":"2","name":"Read"}]}`)
	a := ReadItems(body, "out", callOf)
	turn := a.Turn.(*Turn)
	if len(turn.Items) != 4 || len(a.Calls) != 2 || turn.Calls[0] != 1 || turn.Calls[1] != 3 || a.Calls[1].ID != "2" {
		t.Fatalf("read: %+v %+v", turn, a.Calls)
	}
	kept := turn.Kept(a, func(_ int, c view.ToolCall) bool { return c.Name != "recall" })
	if got := strings.Join(kept, ","); len(kept) != 3 || strings.Contains(got, "recall") || !strings.Contains(got, `"Read"`) {
		t.Errorf("kept: %s", got)
	}
	out, removed, left, err := DropCalls(body, "out", callOf, func(c view.ToolCall) bool { return c.Name == "recall" })
	if err != nil || removed != 1 || left != 1 || strings.Contains(string(out), "recall") || gjson.GetBytes(out, "out.#").Int() != 3 {
		t.Errorf("drop: %s removed %d left %d %v", out, removed, left, err)
	}
	if _, removed, left, _ := DropCalls(body, "out", callOf, func(view.ToolCall) bool { return false }); removed != 0 || left != 2 {
		t.Errorf("drop nothing: removed %d left %d", removed, left)
	}
}

// TestFormatLines: data of several lines goes as several data lines, so
// the event parses back to the same data.
func TestFormatLines(t *testing.T) {
	for _, data := range []string{`{"a":1}`, "{\n\"a\": 1\n}"} {
		ev := Format("x", []byte(data))
		name, got := Parse(bytes.TrimRight(ev, "\n"))
		if name != "x" || string(got) != data || !bytes.HasSuffix(ev, []byte("\n\n")) {
			t.Errorf("Format(%q) = %q, parsed back as %q %q", data, ev, name, got)
		}
	}
}
