package scripted

import (
	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"
)

// What the model reads of a request outside its conversation (the codecs
// give the conversation): whether it streams, the tools it offers, the
// bound of its answer.

// streams reports whether the request asks for server-sent events.
func streams(body []byte) bool { return gjson.GetBytes(body, "stream").Bool() }

// includeUsage reports whether a streamed chat request asks for a usage
// chunk (stream_options.include_usage).
func includeUsage(body []byte) bool {
	return gjson.GetBytes(body, "stream_options.include_usage").Bool()
}

// maxAnswer is the request's bound on the answer, in tokens (0: none).
func maxAnswer(body []byte) int {
	for _, k := range []string{"max_tokens", "max_completion_tokens", "max_output_tokens", "generationConfig.maxOutputTokens"} {
		if v := gjson.GetBytes(body, k); v.Type == gjson.Number && v.Int() > 0 {
			return int(v.Int())
		}
	}
	return 0
}

// tool is a function tool the request offers: its name and its
// arguments' properties (name → JSON schema type).
type tool struct {
	name  string
	props map[string]string
}

// offeredTools lists the request's function tools, in any of the four
// APIs' shapes: chat's {type:function, function:{name, parameters}},
// Messages' {name, input_schema}, Responses' {type:function, name,
// parameters}, Gemini's {functionDeclarations: [{name, parameters or
// parametersJsonSchema}]}. A request whose tool_choice is "none" (Gemini:
// toolConfig's mode NONE) offers none.
func offeredTools(body []byte) []tool {
	if c := gjson.GetBytes(body, "tool_choice"); c.Str == "none" || c.Get("type").Str == "none" ||
		gjson.GetBytes(body, "toolConfig.functionCallingConfig.mode").Str == "NONE" {
		return nil
	}
	var out []tool
	add := func(name string, schema gjson.Result) {
		tl := tool{name: name, props: map[string]string{}}
		schema.Get("properties").ForEach(func(k, v gjson.Result) bool {
			tl.props[k.Str] = v.Get("type").String()
			return true
		})
		out = append(out, tl)
	}
	gjson.GetBytes(body, "tools").ForEach(func(_, t gjson.Result) bool {
		var name string
		var schema gjson.Result
		switch {
		case t.Get("functionDeclarations").IsArray():
			t.Get("functionDeclarations").ForEach(func(_, d gjson.Result) bool {
				schema := d.Get("parametersJsonSchema")
				if !schema.Exists() {
					schema = d.Get("parameters")
				}
				add(d.Get("name").Str, schema)
				return true
			})
			return true
		case t.Get("function.name").Exists():
			name, schema = t.Get("function.name").Str, t.Get("function.parameters")
		case t.Get("input_schema").Exists():
			name, schema = t.Get("name").Str, t.Get("input_schema")
		case t.Get("type").Str == "function":
			name, schema = t.Get("name").Str, t.Get("parameters")
		default:
			return true // a server or custom tool
		}
		add(name, schema)
		return true
	})
	return out
}

// stringInput returns a Responses request's input when it is a plain
// string (one user message).
func stringInput(body []byte) (string, bool) {
	in := gjson.GetBytes(body, "input")
	return in.Str, in.Type == gjson.String
}

// wrapInput returns body with its string input as one user message item.
func wrapInput(body []byte, text string) []byte {
	out, err := sjson.SetBytes(body, "input", []map[string]any{{"type": "message", "role": "user",
		"content": []map[string]string{{"type": "input_text", "text": text}}}})
	if err != nil {
		return body
	}
	return out
}
