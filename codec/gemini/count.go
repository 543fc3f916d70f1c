package gemini

import (
	"strings"

	"github.com/tidwall/gjson"

	"github.com/condense-proxy/condense-proxy/jsonscan"
	"github.com/condense-proxy/condense-proxy/view"
)

// Token estimates of the Gemini format. Gemini's tokenizer is not public:
// text is counted with the registry's encoding for the model and the
// registry's safety factor covers the difference; the fixed parts follow
// Google's documentation and stay on the safe side (a request counted
// high is condensed a little early, never refused for being over the
// window).
const (
	// contentOverhead wraps one content (role and turn markers).
	contentOverhead = 4
	// partOverhead wraps one part.
	partOverhead = 2
	// toolOverhead wraps one function declaration.
	toolOverhead = 8
	// imageTokens is a fixed image estimate: Gemini bills an image 258
	// tokens per 768×768 tile (Gemini 2.x) or up to 1,120 at high media
	// resolution (Gemini 3); the image bytes are never decoded.
	imageTokens = 1290
	// fileTokens is a file referenced by URI (fileData), whose size the
	// request does not say.
	fileTokens = 1290
	// stringDelimiters are the tokens around a string value of a call's
	// args or a response (structured).
	stringDelimiters = 2
)

// opaqueTokens counts an opaque blob (audio, video or a PDF inline) as a
// quarter of its base64 length: conservative and cheap.
func opaqueTokens(s string) int { return (len(s) + 3) / 4 }

// countContent counts one content: its parts.
func (c *Codec) countContent(enc, raw string) int {
	g := gjson.Parse(raw)
	if !g.IsObject() {
		return contentOverhead + c.counter.Text(enc, raw)
	}
	return contentOverhead + c.parts(enc, g.Get("parts"))
}

// parts counts an array of parts.
func (c *Codec) parts(enc string, v gjson.Result) int {
	if !v.IsArray() {
		return 0
	}
	n := 0
	v.ForEach(func(_, p gjson.Result) bool {
		n += partOverhead + c.part(enc, p)
		return true
	})
	return n
}

// part counts one part: text (thought text too) by its tokens, calls and
// responses by their name and structured value (structured), media at
// fixed estimates or by their length; signatures as nothing.
func (c *Codec) part(enc string, p gjson.Result) int {
	if t := p.Get("text"); t.Exists() {
		return c.counter.Text(enc, t.String())
	}
	if fc := field(p, "functionCall", "function_call"); fc.Exists() {
		return c.counter.Text(enc, fc.Get("name").String()) + c.structured(enc, fc.Get("args"))
	}
	if fr := field(p, "functionResponse", "function_response"); fr.Exists() {
		n := c.counter.Text(enc, fr.Get("name").String()) + c.structured(enc, fr.Get("response"))
		fr.Get("parts").ForEach(func(_, q gjson.Result) bool {
			n += partOverhead + c.part(enc, q)
			return true
		})
		return n
	}
	if d := field(p, "inlineData", "inline_data"); d.Exists() {
		if strings.HasPrefix(field(d, "mimeType", "mime_type").String(), "image/") {
			return imageTokens
		}
		return opaqueTokens(d.Get("data").String())
	}
	if field(p, "fileData", "file_data").Exists() {
		return fileTokens
	}
	if ec := field(p, "executableCode", "executable_code"); ec.Exists() {
		return c.counter.Text(enc, ec.Get("code").String())
	}
	if cr := field(p, "codeExecutionResult", "code_execution_result"); cr.Exists() {
		return c.counter.Text(enc, cr.Get("output").String())
	}
	return c.counter.Text(enc, p.Raw)
}

// structured counts a call's args or a response (a JSON value) as the
// model reads structured data: its keys and punctuation, and each string
// by its text plus stringDelimiters — not by the escapes of the request's
// JSON, which double every newline and quote of a file or a command's
// output. Google's published function-calling format (FunctionGemma's:
// `response:name{output:<escape>…<escape>}`) delimits a string value with
// one <escape> token each side and escapes nothing inside it; Gemini's own
// rendering is not public. Counted so, a tool output costs what the same
// text costs as a tool result in the other formats, where it is a string.
func (c *Codec) structured(enc string, v gjson.Result) int {
	if !v.Exists() {
		return 0
	}
	var b strings.Builder
	strs := renderStructured(&b, v)
	return c.counter.Text(enc, b.String()) + stringDelimiters*strs
}

// renderStructured writes v to b as structured data reads to the model
// (structured): objects as {key:value,…}, arrays as [value,…], strings
// unescaped, other values as their JSON. It returns how many strings it
// wrote.
func renderStructured(b *strings.Builder, v gjson.Result) int {
	if v.Type == gjson.String {
		b.WriteString(v.Str)
		return 1
	}
	if !v.IsObject() && !v.IsArray() {
		b.WriteString(v.Raw)
		return 0
	}
	obj, start, end := v.IsObject(), byte('['), byte(']')
	if obj {
		start, end = '{', '}'
	}
	b.WriteByte(start)
	n, sep := 0, false
	v.ForEach(func(k, x gjson.Result) bool {
		if sep {
			b.WriteByte(',')
		}
		sep = true
		if obj {
			b.WriteString(k.String())
			b.WriteByte(':')
		}
		n += renderStructured(b, x)
		return true
	})
	b.WriteByte(end)
	return n
}

// countRest counts what is outside the contents: the system instruction,
// the function declarations and a response schema. Other fields
// (generationConfig's settings, safetySettings, toolConfig) are settings,
// not input.
func (c *Codec) countRest(enc string, r *view.Request, obj *jsonscan.Object) int {
	n := 0
	for _, k := range []string{"systemInstruction", "system_instruction"} {
		if sp, ok := obj.Get(k); ok {
			raw := r.Span(sp[0], sp[1])
			m, _ := c.counter.Cached(enc, "gemini-system", raw, func() int {
				g := gjson.Parse(raw)
				if g.Type == gjson.String {
					return c.counter.Text(enc, g.Str)
				}
				return c.parts(enc, g.Get("parts"))
			})
			n += m
		}
	}
	if sp, ok := obj.Get("tools"); ok {
		raw := r.Span(sp[0], sp[1])
		m, _ := c.counter.Cached(enc, "gemini-tools", raw, func() int { return c.tools(enc, gjson.Parse(raw)) })
		n += m
	}
	for _, k := range []string{"generationConfig", "generation_config"} {
		if sp, ok := obj.Get(k); ok {
			g := gjson.Parse(r.Span(sp[0], sp[1]))
			for _, s := range []string{"responseSchema", "response_schema", "responseJsonSchema", "response_json_schema"} {
				if v := g.Get(s); v.IsObject() {
					n += c.counter.Text(enc, v.Raw)
				}
			}
		}
	}
	return n
}

// tools counts the tools: each function declaration by its name,
// description and parameters; other tools (googleSearch, codeExecution…)
// by their JSON.
func (c *Codec) tools(enc string, tools gjson.Result) int {
	if !tools.IsArray() {
		return 0
	}
	n := 0
	tools.ForEach(func(_, t gjson.Result) bool {
		decls := field(t, "functionDeclarations", "function_declarations")
		if !decls.IsArray() {
			n += toolOverhead + c.counter.Text(enc, t.Raw)
			return true
		}
		decls.ForEach(func(_, d gjson.Result) bool {
			n += toolOverhead + c.counter.Text(enc, d.Get("name").String()) + c.counter.Text(enc, d.Get("description").String())
			for _, s := range []string{"parameters", "parametersJsonSchema", "parameters_json_schema"} {
				if v := d.Get(s); v.Exists() {
					n += c.counter.Text(enc, v.Raw)
				}
			}
			return true
		})
		return true
	})
	return n
}
