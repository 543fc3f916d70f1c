package jsonscan

import (
	"testing"
)

func TestScanObject(t *testing.T) {
	tests := []struct {
		name      string
		body      string
		ok        bool
		elements  []string
		model     string
		escaped   bool
		arrayText string
	}{
		{"plain", `{"model":"m","messages":[{"a":1}, "x" ,[2]],"z":{"messages":[]}}`, true, []string{`{"a":1}`, `"x"`, `[2]`}, `"m"`, false, `[{"a":1}, "x" ,[2]]`},
		{"repeated key: the last wins", `{"messages":[1],"model":"a","messages":[2,3],"model":"b"}`, true, []string{"2", "3"}, `"b"`, false, `[2,3]`},
		{"escaped key", `{"mess\u0061ges":[1]}`, true, nil, "", true, ""},
		{"not an array", `{"messages":{"a":[1]}}`, true, nil, "", false, ""},
		{"empty array", `{"messages":[ ]}`, true, nil, "", false, "[ ]"},
		{"not an object", `[{"messages":[1]}]`, false, nil, "", false, ""},
		{"truncated", `{"messages":[1,`, false, nil, "", false, ""},
		{"trailing garbage", `{"messages":[1]} x`, false, nil, "", false, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			obj, ok := ScanObject([]byte(tc.body), "messages")
			if ok != tc.ok {
				t.Fatalf("ok = %v, want %v", ok, tc.ok)
			}
			if !ok {
				return
			}
			if len(obj.Elements) != len(tc.elements) {
				t.Fatalf("elements %v, want %v", obj.Elements, tc.elements)
			}
			for i, sp := range obj.Elements {
				if got := tc.body[sp[0]:sp[1]]; got != tc.elements[i] {
					t.Errorf("element %d = %q, want %q", i, got, tc.elements[i])
				}
			}
			if got := tc.body[obj.Array[0]:obj.Array[1]]; got != tc.arrayText {
				t.Errorf("array = %q, want %q", got, tc.arrayText)
			}
			sp, found := obj.Get("model")
			if got := tc.body[sp[0]:sp[1]]; found != (tc.model != "") || got != tc.model {
				t.Errorf("model = %q (%v), want %q", got, found, tc.model)
			}
			if obj.EscapedKey != tc.escaped {
				t.Errorf("escaped = %v", obj.EscapedKey)
			}
		})
	}
}
