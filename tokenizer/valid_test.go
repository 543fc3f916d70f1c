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
