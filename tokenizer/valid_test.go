package tokenizer

import (
	"encoding/json"
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
	if sc := scanChat(`[{"messages":[]}]`); sc.object || sc.hasMessages {
		t.Errorf("array root scanned as chat: %+v", sc)
	}
}
