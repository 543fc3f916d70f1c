package textvalue

import "testing"

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
