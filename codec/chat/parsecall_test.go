package chat

import (
	"testing"

	"github.com/tidwall/gjson"

	"github.com/condense-proxy/condense-proxy/view"
)

// TestParseCallAsGJSON holds parseCall to what gjson's paths read from the
// same tool call, including the cases a field scan could get wrong: a
// repeated key, an escaped one, a function that is not an object,
// arguments that are not a string.
func TestParseCallAsGJSON(t *testing.T) {
	for _, tc := range []string{
		`{"id":"c1","type":"function","function":{"name":"read","arguments":"{\"path\":\"a.go\"}"}}`,
		`{"function":{"arguments":"{}","name":"ls"},"id":"c2"}`,
		`{"id":"c3","id":"c4","function":{"name":"a","name":"b","arguments":"x","arguments":"y"}}`,
		`{"\u0069d":"c5","function":{"n\u0061me":"esc","arguments":"{}"}}`,
		`{"id":"c6","function":"not an object"}`,
		`{"id":"c7","function":{"name":"obj","arguments":{"path":"b.go"}}}`,
		`{"id":7,"function":{"name":null}}`,
		`{"id":"c8"}`,
		`{ "id" : "c9" , "function" : { "name" : "spaced" , "arguments" : "\"q\"" } }`,
	} {
		const at = 100
		got := parseCall(tc, at, &callFields{})
		g := gjson.Parse(tc)
		want := view.Call{ID: g.Get("id").Str, Name: g.Get("function.name").Str}
		args := g.Get("function.arguments")
		want.Args = args.String()
		if args.Type == gjson.String && args.Index > 0 {
			want.ArgsSpan = [2]int{at + args.Index, at + args.Index + len(args.Raw)}
		}
		if got != want {
			t.Errorf("%s:\n got %+v\nwant %+v", tc, got, want)
		}
	}
}
