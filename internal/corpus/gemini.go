package corpus

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/condense-proxy/condense-proxy/internal/fakeupstream/fakesign"
)

// GeminiModel is the model a GeminiSession's requests name in their path
// unless told otherwise: the one Gemini CLI is run with in the agent tests
// (internal/agents/REQUEST-SHAPES.md).
const GeminiModel = "gemini-2.5-pro"

// GeminiSession is a session in Google's Gemini form, as Gemini CLI 0.61
// sends it to :streamGenerateContent: the system prompt as
// systemInstruction, then contents whose roles alternate user / model —
// the first user content opens with Gemini CLI's <session_context> part;
// a model content is the assistant's text part and its functionCall
// parts (id, name, args as an object), the first call signed with a
// thoughtSignature by fakesign.Default, as Gemini signs a thinking
// model's calls (so the strict fake accepts it); the next user content
// answers each call with a functionResponse part of the same id and name,
// {"output": text}, then carries any user text. Consecutive messages of
// one role share a content. Recorded reasoning is not sent: Gemini CLI
// keeps no thought parts in its history.
//
// Request k is the history before the k-th assistant message that opens a
// model content (an assistant message with neither text nor calls opens
// none, and one right after another shares its content: Gemini CLI never
// sends those turns), and the whole session.
//
// Safe for concurrent use once built.
type GeminiSession struct {
	Name   string
	Format string // the source's
	// Model is the model of the requests' path; default GeminiModel.
	Model string

	system   string   // raw systemInstruction
	tools    string   // raw tools; "" when the session calls none
	contents []string // raw contents of the whole session
	ends     []int    // contents of each request
}

// geminiSessionContext imitates the first part of Gemini CLI 0.61's first
// content (its <session_context>, without the directory listing).
const geminiSessionContext = "<session_context>\nThis is the Gemini CLI. We are setting up the context for our chat.\n" +
	"Today's date is Thursday, January 1, 2026 (formatted according to the user's locale).\nMy operating system is: linux\n" +
	"The project's temporary directory is: /tmp/gemini\n</session_context>"

// geminiGenerationConfig is Gemini CLI 0.61's generationConfig.
const geminiGenerationConfig = `{"temperature":1,"topP":0.95,"topK":64,"thinkingConfig":{"includeThoughts":true,"thinkingBudget":8192}}`

// Gemini converts a chat-form session into Gemini form.
func Gemini(s *Session) *GeminiSession {
	g := &GeminiSession{Name: s.Name, Format: s.Format, Model: GeminiModel}
	var b geminiBuilder
	var system []string
	names := map[string]string{} // call id → function name
	opens := map[int]int{}       // message index → contents before it, when it opens a model content
	b.add("user", textPart(geminiSessionContext))
	for i, m := range s.Messages {
		text := ""
		if m.Content != nil {
			text = *m.Content
		}
		switch m.Role {
		case "system", "developer":
			if len(b.contents) == 1 && len(b.contents[0].parts) == 1 { // before the conversation
				system = append(system, textPart(text))
				continue
			}
			b.addText("user", text)
		case "user":
			b.addText("user", text)
		case "tool":
			b.add("user", functionResponse(m.ToolCallID, names[m.ToolCallID], text))
		case "assistant":
			var parts []string
			if strings.TrimSpace(text) != "" {
				parts = append(parts, textPart(text))
			}
			for j, c := range m.ToolCalls {
				names[c.ID] = c.Function.Name
				parts = append(parts, functionCall(c, j == 0))
			}
			if len(parts) == 0 {
				continue
			}
			if b.last() != "model" {
				opens[i] = len(b.contents)
			}
			b.add("model", parts...)
		}
	}
	g.contents = b.raw()
	for _, n := range s.TurnEnds() {
		if n == len(s.Messages) {
			if b.last() == "user" {
				g.ends = append(g.ends, len(g.contents))
			}
			continue
		}
		if k, ok := opens[n]; ok {
			g.ends = append(g.ends, k)
		}
	}
	if len(system) == 0 {
		system = []string{textPart(DefaultSystemPrompt)}
	}
	g.system = `{"parts":[` + strings.Join(system, ",") + `]}`
	g.tools = geminiTools(s.Tools)
	return g
}

// geminiBuilder groups parts into contents of alternating roles.
type geminiBuilder struct {
	contents []geminiContent
}

type geminiContent struct {
	role  string
	parts []string // raw
}

// add appends parts to the last content when it has role, else opens a
// content.
func (b *geminiBuilder) add(role string, parts ...string) {
	if n := len(b.contents); n > 0 && b.contents[n-1].role == role {
		b.contents[n-1].parts = append(b.contents[n-1].parts, parts...)
		return
	}
	b.contents = append(b.contents, geminiContent{role: role, parts: parts})
}

// addText adds a text part, unless the text is blank (the API refuses
// empty text parts).
func (b *geminiBuilder) addText(role, text string) {
	if strings.TrimSpace(text) != "" {
		b.add(role, textPart(text))
	}
}

// last is the role of the last content.
func (b *geminiBuilder) last() string {
	if len(b.contents) == 0 {
		return ""
	}
	return b.contents[len(b.contents)-1].role
}

func (b *geminiBuilder) raw() []string {
	out := make([]string, len(b.contents))
	for i, c := range b.contents {
		out[i] = `{"role":"` + c.role + `","parts":[` + strings.Join(c.parts, ",") + `]}`
	}
	return out
}

func textPart(text string) string {
	b, _ := json.Marshal(map[string]string{"text": text})
	return string(b)
}

// functionCall is a call as a model part: args an object (arguments that
// are not one are wrapped as {"arguments": "…"}); signed when first is
// set.
func functionCall(c ToolCall, first bool) string {
	args := strings.TrimSpace(c.Function.Arguments)
	if !gjson.Valid(args) || !gjson.Parse(args).IsObject() {
		b, _ := json.Marshal(map[string]string{"arguments": c.Function.Arguments})
		args = string(b)
	}
	call, _ := json.Marshal(map[string]any{"id": c.ID, "name": c.Function.Name, "args": json.RawMessage(args)})
	part := `{"functionCall":` + string(call)
	if first {
		// Bound to the call as the fake binds a Gemini signature
		// (fakeupstream's signedContent): its name and its arguments as
		// sent, compacted.
		sent := gjson.Get(gjson.GetBytes(call, "args").Raw, "@ugly").Raw
		sig, _ := json.Marshal(fakesign.Default.SignThinking("call:" + c.Function.Name + ":" + sent))
		part += `,"thoughtSignature":` + string(sig)
	}
	return part + "}"
}

// functionResponse answers call id of function name with output, as
// Gemini CLI does.
func functionResponse(id, name, output string) string {
	b, _ := json.Marshal(map[string]any{"functionResponse": map[string]any{"id": id, "name": name, "response": map[string]string{"output": output}}})
	return string(b)
}

// geminiTools declares the session's tools as Gemini CLI does (one tools
// entry, parametersJsonSchema); "" when there are none.
func geminiTools(names []string) string {
	if len(names) == 0 {
		return ""
	}
	type decl struct {
		Name        string         `json:"name"`
		Description string         `json:"description"`
		Schema      map[string]any `json:"parametersJsonSchema"`
	}
	var ds []decl
	for _, name := range names {
		ds = append(ds, decl{Name: name, Description: toolDescription(name), Schema: map[string]any{"type": "object", "properties": map[string]any{}}})
	}
	b, _ := json.Marshal([]map[string]any{{"functionDeclarations": ds}})
	return string(b)
}

// Turns returns how many requests the session holds.
func (g *GeminiSession) Turns() int { return len(g.ends) }

// Contents returns the number of contents of request k.
func (g *GeminiSession) Contents(k int) int { return g.ends[k] }

// PathModel returns the model the requests name in their path.
func (g *GeminiSession) PathModel() string {
	if g.Model == "" {
		return GeminiModel
	}
	return g.Model
}

// Request returns the body of request k (0 ≤ k < Turns()), shaped like
// Gemini CLI's: contents, systemInstruction, tools, generationConfig.
func (g *GeminiSession) Request(k int) ([]byte, error) {
	if k < 0 || k >= len(g.ends) {
		return nil, fmt.Errorf("request %d of %d", k, len(g.ends))
	}
	var b strings.Builder
	b.WriteString(`{"contents":[`)
	b.WriteString(strings.Join(g.contents[:g.ends[k]], ","))
	b.WriteString(`],"systemInstruction":`)
	b.WriteString(g.system)
	if g.tools != "" {
		b.WriteString(`,"tools":`)
		b.WriteString(g.tools)
	}
	b.WriteString(`,"generationConfig":`)
	b.WriteString(geminiGenerationConfig)
	b.WriteString(`}`)
	return []byte(b.String()), nil
}
