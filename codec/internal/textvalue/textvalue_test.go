package textvalue

import (
	"bytes"
	"encoding/json"
	"testing"
)

func TestEditable(t *testing.T) {
	tests := []struct {
		name, value string
		editable    bool
		text        string
	}{
		{"string", `"a\nb"`, true, "a\nb"},
		{"text parts", `[{"type":"text","text":"a"},{"type":"input_text","text":"b"},{"type":"output_text","text":"c"}]`, true, "a\nb\nc"},
		{"marked part", `[{"type":"text","text":"a","cache_control":{"type":"ephemeral"}}]`, false, ""},
		{"image beside text", `[{"type":"text","text":"a"},{"type":"image","source":{}}]`, false, ""},
		{"not parts", `[1,2]`, false, ""},
		{"object", `{"a":1}`, false, ""},
		{"null", `null`, false, ""},
		{"empty", ``, false, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := Editable(tc.value); got != tc.editable {
				t.Fatalf("Editable(%s) = %v", tc.value, got)
			}
			if tc.editable {
				if got := Text(tc.value); got != tc.text {
					t.Errorf("Text(%s) = %q, want %q", tc.value, got, tc.text)
				}
				if got := Text(string(String(tc.text))); got != tc.text {
					t.Errorf("Text(String(%q)) = %q", tc.text, got)
				}
			}
		})
	}
}

func TestContent(t *testing.T) {
	raw := `{"role":"tool","content":"x","content":["y"]}`
	start, end, ok := Content(raw)
	if !ok || raw[start:end] != `["y"]` {
		t.Fatalf("Content: %d %d %v", start, end, ok)
	}
	if _, _, ok := Content(`{"output":"x"}`); ok {
		t.Fatal("Content found in an object without one")
	}
}

// FuzzString holds String to encoding/json's bytes: what it writes ends up
// in forwarded bodies and in the keys of cached digests.
func FuzzString(f *testing.F) {
	for _, s := range []string{"", "plain", "a\"b\\c", "<a href='x'>&amp;</a>", "\x00\x01\x1f\x7f", "\b\f\n\r\t",
		"caf\u00e9 \u2028 \u2029 \U0001F600", "bad \xff\xfe utf8 \xe2\x82", "\xed\xa0\x80 surrogate",
		"eight by", "0123456789abcdef<", "0123456789abcde\x1fxyz", "01234567\"89abcdef", "0123456789\\abcdefghij&", "01234567>", "0123456789ab\u00e9cdefgh"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		if got := String(s); !bytes.Equal(got, want) {
			t.Fatalf("String(%q) = %s, want %s", s, got, want)
		}
	})
}
