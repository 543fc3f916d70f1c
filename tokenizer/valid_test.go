package tokenizer

import (
	"encoding/json"
	"fmt"
	"testing"
)

func TestValidMatchesEncodingJSON(t *testing.T) {
	cases := []string{
		``, ` `, `{}`, `[]`, `null`, `true`, `fals`, `0`, `-0`, `01`, `1.`, `1.5e+3`, `-`, `1e`, `"a"`, `"a`, `"\u00e9"`, `"\u00g9"`,
		`"\x"`, "\"tab\there\"", `"long string with \"escapes\" and \\ backslashes over eight bytes"`,
		`{"a":1,}`, `{"a" 1}`, `{"a":[1,2,{"b":null}],"c":"d"}`, `[1,2`, `[1 2]`, `{"a":1} x`, ` {"messages":[]} `,
		"\"\x7f\x80\xff\"", `{"k":"v"`, `{,}`, `[,]`, `{"a":tru}`, `"12345678\"12345678"`, "\"1234567\n\"",
	}
	for _, c := range cases {
		if got, want := Valid(c), json.Valid([]byte(c)); got != want {
			t.Errorf("Valid(%q) = %v, encoding/json says %v", c, got, want)
		}
	}
}

func FuzzValid(f *testing.F) {
	f.Add(`{"messages":[{"role":"user","content":"hi\n"}]}`)
	f.Add(`[1,"\u1234",{"a":null}]`)
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := Valid(s), json.Valid([]byte(s)); got != want {
			t.Fatalf("Valid(%q) = %v, encoding/json says %v", s, got, want)
		}
	})
}

func TestScanChatSpans(t *testing.T) {
	s := `{"tools":[{"type":"function"}], "messages" : [ {"role":"user","content":"a"} ,{"role":"assistant","content":null}], "x":{"messages":[1]}}`
	sc := scanChat(s)
	if !sc.valid || !sc.object || !sc.hasMessages || len(sc.messages) != 2 {
		t.Fatalf("scan %+v", sc)
	}
	if got := s[sc.messages[0][0]:sc.messages[0][1]]; got != `{"role":"user","content":"a"}` {
		t.Errorf("first span %q", got)
	}
	if got := s[sc.messages[1][0]:sc.messages[1][1]]; got != `{"role":"assistant","content":null}` {
		t.Errorf("second span %q", got)
	}
	if got := s[sc.tools[0]:sc.tools[1]]; got != `[{"type":"function"}]` {
		t.Errorf("tools span %q", got)
	}
	f := sc.fields[0]
	m := s[sc.messages[0][0]:sc.messages[0][1]]
	if m[f.Role[0]:f.Role[1]] != `"user"` || m[f.Content[0]:f.Content[1]] != `"a"` || f.ToolCalls != [2]int{} {
		t.Errorf("fields %+v of %s", f, m)
	}
	sc2 := scanChat(`{"messages":[{"role":"assistant","tool_calls":[{"id":"x","function":{"role":"no","content":"no"}}],"content":null},{"role":"tool","tool_call_id":"x","content":"y"}]}`)
	f0, f1 := sc2.fields[0], sc2.fields[1]
	if f0.Role[1]-f0.Role[0] != len(`"assistant"`) || f0.ToolCalls == [2]int{} || f0.Content[1]-f0.Content[0] != 4 || f1.ToolCallID[1]-f1.ToolCallID[0] != 3 {
		t.Errorf("fields %+v %+v", f0, f1)
	}
	if sc := scanChat(`[{"messages":[]}]`); sc.object || sc.hasMessages {
		t.Errorf("array root scanned as chat: %+v", sc)
	}
}

func TestFieldSpan(t *testing.T) {
	obj := `{"role":"tool", "content" : "a\"b\nc", "tool_call_id":"x1","n":{"content":"inner"}}`
	s, e, ok := FieldSpan(obj, "content")
	if !ok || obj[s:e] != `"a\"b\nc"` {
		t.Errorf("content span %q %v", obj[s:e], ok)
	}
	s, e, ok = FieldSpan(obj, "tool_call_id")
	if !ok || obj[s:e] != `"x1"` {
		t.Errorf("tool_call_id span %q", obj[s:e])
	}
	if _, _, ok := FieldSpan(obj, "missing"); ok {
		t.Error("missing key found")
	}
	if _, _, ok := FieldSpan(`[1]`, "a"); ok {
		t.Error("array treated as object")
	}
	if _, _, ok := FieldSpan(`{"a":1`, "a"); ok {
		t.Error("truncated object accepted")
	}
}

// FuzzRequest: counting any bytes never panics, and a body is either not a
// chat request or has a positive count per message.
func FuzzRequest(f *testing.F) {
	f.Add([]byte(`{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function","function":{"name":"f"}}]}`))
	f.Add([]byte(`{"messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"x"}}]}]}`))
	f.Add([]byte(`{"messages":[1,"x",null,{"content":{"a":[1,2]}}]}`))
	c := New(Options{})
	f.Fuzz(func(t *testing.T, body []byte) {
		rc, err := c.Request(O200kBase, body)
		if err != nil {
			return
		}
		if len(rc.Messages) != len(rc.Spans) || len(rc.Fields) != len(rc.Spans) {
			t.Fatal("spans and counts disagree")
		}
		for i, n := range rc.Messages {
			if n < tokensPerMessage {
				t.Fatalf("message %d counted %d", i, n)
			}
			sp := rc.Spans[i]
			if sp[0] < 0 || sp[1] > len(body) || sp[0] >= sp[1] {
				t.Fatalf("bad span %v", sp)
			}
		}
	})
}

func TestFieldSpansElems(t *testing.T) {
	var elems [][2]int
	var sp [1][2]int
	obj := `{"content": [ {"a":1}, "x" ,[2]], "role":"user"}`
	if !FieldSpansElems(obj, []string{"role"}, sp[:], "content", &elems) {
		t.Fatal("valid object refused")
	}
	var got []string
	for _, e := range elems {
		got = append(got, obj[e[0]:e[1]])
	}
	if want := []string{`{"a":1}`, `"x"`, `[2]`}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("elements %q, want %q", got, want)
	}
	if obj[sp[0][0]:sp[0][1]] != `"user"` {
		t.Errorf("role span %v", sp[0])
	}
	// Not an array: no elements, whatever the slice held before.
	elems = append(elems[:0], [2]int{1, 2})
	if !FieldSpansElems(`{"content":"x"}`, nil, nil, "content", &elems) || len(elems) != 0 {
		t.Errorf("string content: elements %v", elems)
	}
	if FieldSpansElems(`{"content":[1,}`, nil, nil, "content", &elems) {
		t.Error("malformed array accepted")
	}
}
