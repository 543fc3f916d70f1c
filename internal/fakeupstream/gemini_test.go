package fakeupstream

import (
	"fmt"
	"strings"
	"testing"
)

// TestCountGeminiStructured: the fake bills a call's args and a response
// as their text (keys, values, a delimiter pair a string), not as the
// escapes of the request's JSON: a file read costs about what the same
// text costs as a text part.
func TestCountGeminiStructured(t *testing.T) {
	var b strings.Builder
	for i := 0; i < 200; i++ {
		fmt.Fprintf(&b, "%4d\t\tif err := parse(\"%d\\n\", `a\\b`); err != nil {\n", i+1, i)
	}
	out := jsonString(b.String())
	c := (&Gemini{}).counter()
	count := func(contents ...string) int {
		return CountGemini(c, []byte(`{"contents":[`+strings.Join(contents, ",")+`]}`))
	}
	text := count(`{"role":"user","parts":[{"text":` + out + `}]}`)
	resp := count(`{"role":"user","parts":[{"functionResponse":{"id":"c1","name":"run","response":{"output":` + out + `}}}]}`)
	call := count(`{"role":"model","parts":[{"functionCall":{"id":"c1","name":"run","args":{"command":` + out + `}}}]}`)
	nested := count(`{"role":"user","parts":[{"functionResponse":{"name":"run","response":{"output":` + out + `,"exit":{"code":1,"lines":[` + out + `,true]}}}}]}`)
	if d := resp - text; d < 0 || d > 12 {
		t.Errorf("response %d tokens, its output as text %d", resp, text)
	}
	if d := call - text; d < 0 || d > 12 {
		t.Errorf("call %d tokens, its argument as text %d", call, text)
	}
	if d := nested - 2*text; d < 0 || d > 30 {
		t.Errorf("nested response %d tokens, its two outputs %d each", nested, text)
	}
}
