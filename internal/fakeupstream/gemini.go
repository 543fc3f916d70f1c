package fakeupstream

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tidwall/gjson"

	"github.com/condense-proxy/condense-proxy/tokenizer"
)

// Gemini is a strict stand-in for Google's Gemini API:
// POST /v1beta/models/{model}:generateContent, :streamGenerateContent
// (server-sent events with alt=sse, one JSON array without) and
// :countTokens, under /v1/ too.
//
// It rejects with 400 and Google's error body what the real API rejects
// (see ValidateGemini) — roles that do not alternate, a functionCall turn
// not answered by the next turn's functionResponse parts, one by one, a
// thoughtSignature it did not issue for exactly that part, a request over
// Window — and answers valid requests with the first part of each answer
// carrying a thoughtSignature it signed (as Gemini 3 does), and
// usageMetadata (promptTokenCount as CountGemini counts the request).
//
// Every request is recorded (Received, Rejected, Take, Reset). The zero
// value is ready to use; fields must be set before the first request. Safe
// for concurrent use.
type Gemini struct {
	recorder

	// Signer signs and checks thought signatures. Zero: DefaultSigner.
	Signer Signer
	// Counter counts input tokens. Nil: one made on first use.
	Counter *tokenizer.Counter
	// Answer, if set, decides the reply to each valid generateContent
	// request (a Script's Gemini method). Nil: a short text.
	Answer func(body []byte) Reply
	// Summarize, if set, answers condense-proxy's summarizer calls. Nil:
	// DefaultSummary.
	Summarize func(body []byte) (status int, text string)
	// Window, if above 0, refuses requests counted over it, as the API
	// refuses a prompt over the model's input limit.
	Window int
	// Key, if set, is the API key every request must carry
	// (x-goog-api-key or ?key=).
	Key string
	// Delay is the pause before each answer. Zero: DefaultDelay; negative:
	// none.
	Delay time.Duration

	once sync.Once
	seq  atomic.Int64
}

var _ http.Handler = (*Gemini)(nil)

func (g *Gemini) counter() *tokenizer.Counter {
	g.once.Do(func() {
		if g.Counter == nil {
			g.Counter = tokenizer.New(tokenizer.Options{})
		}
	})
	return g.Counter
}

// IsGeminiPath reports whether p is a Gemini model method's path
// (/v1beta/models/{model}:{method} or /v1/models/…), and returns the model
// and the method.
func IsGeminiPath(p string) (model, method string, ok bool) {
	rest, found := strings.CutPrefix(p, "/v1beta/models/")
	if !found {
		if rest, found = strings.CutPrefix(p, "/v1/models/"); !found {
			return "", "", false
		}
	}
	model, method, ok = strings.Cut(rest, ":")
	return model, method, ok && model != "" && !strings.Contains(model, "/")
}

// WithGemini routes Gemini model methods to g and everything else to h.
func WithGemini(h http.Handler, g *Gemini) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, _, ok := IsGeminiPath(r.URL.Path); ok && g != nil {
			g.ServeHTTP(w, r)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// googleStatus names an HTTP status as Google's errors do.
func googleStatus(code int) string {
	switch code {
	case http.StatusBadRequest:
		return "INVALID_ARGUMENT"
	case http.StatusForbidden:
		return "PERMISSION_DENIED"
	case http.StatusNotFound:
		return "NOT_FOUND"
	case http.StatusTooManyRequests:
		return "RESOURCE_EXHAUSTED"
	}
	return "INTERNAL"
}

func writeGoogleError(w http.ResponseWriter, e *APIError) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(e.Status)
	json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"code": e.Status, "message": e.Message, "status": googleStatus(e.Status)}})
}

// ServeHTTP implements http.Handler.
func (g *Gemini) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, fail, err := g.receive(w, r, g.Delay, writeGoogleError)
	if err != nil {
		fail(invalid("reading body: %v", err), 0)
		return
	}
	model, method, ok := IsGeminiPath(r.URL.Path)
	switch {
	case !ok || (method != "generateContent" && method != "streamGenerateContent" && method != "countTokens"):
		fail(&APIError{Status: http.StatusNotFound, Message: "Not Found"}, 0)
		return
	case r.Method != http.MethodPost:
		fail(&APIError{Status: http.StatusMethodNotAllowed, Message: "Method Not Allowed"}, 0)
		return
	case g.Key != "" && r.Header.Get("X-Goog-Api-Key") != g.Key && r.URL.Query().Get("key") != g.Key:
		fail(&APIError{Status: http.StatusBadRequest, Message: "API key not valid. Please pass a valid API key."}, 0)
		return
	}
	signer := g.Signer
	if method == "countTokens" {
		req := body
		if inner := gjson.GetBytes(body, "generateContentRequest"); inner.IsObject() {
			req = []byte(inner.Raw)
		}
		if e := validateGemini(req, signer, true); e != nil {
			fail(e, 0)
			return
		}
		n := CountGemini(g.counter(), req)
		g.add(r, body, http.StatusOK, n, "")
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, "{\"totalTokens\":%d}\n", n)
		return
	}
	if e := ValidateGemini(body, signer); e != nil {
		fail(e, 0)
		return
	}
	tokens := CountGemini(g.counter(), body)
	if g.Window > 0 && tokens > g.Window {
		fail(invalid("The input token count (%d) exceeds the maximum number of tokens allowed (%d).", tokens, g.Window), tokens)
		return
	}
	var rep Reply
	switch {
	case IsSummaryRequest(body):
		rep = Reply{Text: DefaultSummary}
		if g.Summarize != nil {
			rep.Status, rep.Text = g.Summarize(body)
			if rep.Status != http.StatusOK {
				rep.Error = "summarizer failure"
			}
		}
	case g.Answer != nil:
		rep = g.Answer(body)
	default:
		rep = Reply{Text: "Done."}
	}
	if rep.Status != 0 && rep.Status != http.StatusOK {
		fail(&APIError{Status: rep.Status, Message: rep.Error}, tokens)
		return
	}
	g.addAnswered(r, body, http.StatusOK, tokens, "", summaryAnswer(body, rep.Text))
	parts := g.parts(rep, signer, gjson.GetBytes(body, "generationConfig.thinkingConfig.includeThoughts").Bool())
	out := 0
	for _, p := range parts {
		out += g.counter().Text(tokenizer.O200kBase, gjson.Get(p, "text").String()+gjson.Get(p, "functionCall.args").Raw)
	}
	usage := map[string]any{"promptTokenCount": tokens, "candidatesTokenCount": out, "totalTokenCount": tokens + out}
	id := fmt.Sprintf("fake%06d", g.seq.Add(1))
	chunk := func(ps []string, final bool) []byte {
		cand := map[string]any{"content": map[string]any{"role": "model", "parts": json.RawMessage("[" + strings.Join(ps, ",") + "]")}, "index": 0}
		if final {
			cand["finishReason"] = "STOP"
		}
		b, _ := json.Marshal(map[string]any{"candidates": []any{cand}, "usageMetadata": usage, "modelVersion": model, "responseId": id})
		return b
	}
	if method == "generateContent" {
		w.Header().Set("Content-Type", "application/json")
		w.Write(chunk(parts, true))
		return
	}
	sse := r.URL.Query().Get("alt") == "sse"
	if sse {
		w.Header().Set("Content-Type", "text/event-stream")
	} else {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, "[")
	}
	fl, _ := w.(http.Flusher)
	for i, p := range parts {
		b := chunk([]string{p}, i == len(parts)-1)
		if sse {
			fmt.Fprintf(w, "data: %s\r\n\r\n", b)
		} else {
			if i > 0 {
				io.WriteString(w, ",\r\n")
			}
			w.Write(b)
		}
		if fl != nil {
			fl.Flush()
		}
	}
	if !sse {
		io.WriteString(w, "]")
	}
}

// parts renders a reply as Gemini parts: thoughts first when asked for,
// the text, the calls; the first part carries a thoughtSignature signed
// for it.
func (g *Gemini) parts(rep Reply, signer Signer, thoughts bool) []string {
	var ps []map[string]any
	if thoughts && rep.Thinking != "" {
		ps = append(ps, map[string]any{"text": rep.Thinking, "thought": true})
	}
	if rep.Text != "" || len(rep.Calls) == 0 {
		ps = append(ps, map[string]any{"text": rep.Text})
	}
	for i, c := range rep.Calls {
		id := c.ID
		if id == "" {
			id = fmt.Sprintf("call_fake_%d", i)
		}
		args := c.Input
		if !gjson.Valid(args) || !gjson.Parse(args).IsObject() {
			args = "{}"
		}
		ps = append(ps, map[string]any{"functionCall": map[string]any{"id": id, "name": c.Name, "args": json.RawMessage(gjson.Get(args, "@ugly").Raw)}})
	}
	// Gemini 3 signs the first call of a turn, or its first part.
	at := 0
	for i, p := range ps {
		if _, ok := p["functionCall"]; ok {
			at = i
			break
		}
	}
	ps[at]["thoughtSignature"] = signer.SignThinking(signedContent(ps[at]))
	out := make([]string, len(ps))
	for i, p := range ps {
		b, _ := json.Marshal(p)
		out[i] = string(b)
	}
	return out
}

// signedContent is what a part's thoughtSignature is bound to: its text,
// or its call's name and arguments (compacted).
func signedContent(p any) string {
	b, _ := json.Marshal(p)
	v := gjson.ParseBytes(b)
	if fc := v.Get("functionCall"); fc.Exists() {
		return "call:" + fc.Get("name").String() + ":" + gjson.Get(fc.Get("args").Raw, "@ugly").Raw
	}
	return "text:" + v.Get("text").String()
}

// ValidateGemini checks a generateContent request as the API does.
func ValidateGemini(body []byte, signer Signer) *APIError {
	return validateGemini(body, signer, false)
}

// partKinds are the data fields of a part; exactly one is set.
var partKinds = []string{"text", "inlineData", "fileData", "functionCall", "functionResponse", "executableCode", "codeExecutionResult"}

func validateGemini(body []byte, signer Signer, countTokens bool) *APIError {
	if !gjson.ValidBytes(body) || !gjson.ParseBytes(body).IsObject() {
		return invalid("Invalid JSON payload received.")
	}
	root := gjson.ParseBytes(body)
	contents := root.Get("contents")
	if !contents.IsArray() || len(contents.Array()) == 0 {
		return invalid("* GenerateContentRequest.contents: contents is not specified")
	}
	if si := root.Get("systemInstruction"); si.Exists() {
		var e *APIError
		si.Get("parts").ForEach(func(_, p gjson.Result) bool {
			if !p.Get("text").Exists() {
				e = invalid("systemInstruction parts must be text")
			}
			return e == nil
		})
		if e != nil {
			return e
		}
	}
	names := map[string]bool{}
	var te *APIError
	root.Get("tools").ForEach(func(_, t gjson.Result) bool {
		t.Get("functionDeclarations").ForEach(func(_, d gjson.Result) bool {
			n := d.Get("name").String()
			if n == "" || names[n] {
				te = invalid("* GenerateContentRequest.tools[0].function_declarations: duplicate or empty name %q", n)
			}
			names[n] = true
			return te == nil
		})
		return te == nil
	})
	if te != nil {
		return te
	}
	cs := contents.Array()
	var pending []gjson.Result // the calls of the model turn before
	for i, c := range cs {
		role := c.Get("role").String()
		if role != "user" && role != "model" {
			return invalid("* GenerateContentRequest.contents[%d].role: must be user or model, got %q", i, role)
		}
		parts := c.Get("parts").Array()
		if len(parts) == 0 {
			return invalid("* GenerateContentRequest.contents[%d].parts: contents.parts must not be empty.", i)
		}
		if i == 0 && role != "user" && !countTokens {
			return invalid("Please ensure that multiturn requests start with a user turn.")
		}
		if i > 0 && cs[i-1].Get("role").String() == role {
			return invalid("Please ensure that multiturn requests alternate between user and model.")
		}
		var calls, responses []gjson.Result
		for k, p := range parts {
			n := 0
			for _, kind := range partKinds {
				if p.Get(kind).Exists() {
					n++
				}
			}
			if n != 1 {
				return invalid("* GenerateContentRequest.contents[%d].parts[%d].data: required oneof field 'data' must have one initialized field", i, k)
			}
			if sig := p.Get("thoughtSignature"); sig.Exists() {
				if role != "model" || !signer.VerifyThinking(signedContent(json.RawMessage(p.Raw)), sig.String()) {
					return invalid("Corrupted thought signature. (contents[%d].parts[%d])", i, k)
				}
			}
			if fc := p.Get("functionCall"); fc.Exists() {
				if role != "model" {
					return invalid("* contents[%d].parts[%d]: functionCall in a user turn", i, k)
				}
				calls = append(calls, fc)
			}
			if fr := p.Get("functionResponse"); fr.Exists() {
				if role != "user" {
					return invalid("* contents[%d].parts[%d]: functionResponse in a model turn", i, k)
				}
				if !fr.Get("response").IsObject() {
					return invalid("* contents[%d].parts[%d].function_response.response: must be an object", i, k)
				}
				responses = append(responses, fr)
			}
		}
		if len(responses) > 0 || len(pending) > 0 {
			if len(responses) != len(pending) {
				return invalid("Please ensure that the number of function response parts is equal to the number of function call parts of the function call turn. (contents[%d])", i)
			}
			if !sameNames(pending, responses) {
				return invalid("Please ensure that function response names match the function call names of the function call turn. (contents[%d])", i)
			}
		}
		pending = calls
	}
	if last := cs[len(cs)-1]; !countTokens && last.Get("role").String() != "user" {
		return invalid("Please ensure that multiturn requests ends with a user role or a function response.")
	}
	return nil
}

func sameNames(calls, responses []gjson.Result) bool {
	var a, b []string
	for _, c := range calls {
		a = append(a, c.Get("name").String())
	}
	for _, r := range responses {
		b = append(b, r.Get("name").String())
	}
	sort.Strings(a)
	sort.Strings(b)
	return strings.Join(a, "\x00") == strings.Join(b, "\x00")
}

// CountGemini counts a Gemini request as the fake bills it: every text,
// call and response of the contents, the system instruction and the
// tools, with the o200k encoding, plus 4 per content. A call's args and a
// response are structured data, read as Google's published
// function-calling format (FunctionGemma's) lays it out: keys and
// punctuation, each string unescaped between two delimiter tokens.
func CountGemini(c *tokenizer.Counter, body []byte) int {
	root := gjson.ParseBytes(body)
	n := 0
	text := func(s string) { n += c.Text(tokenizer.O200kBase, s) }
	structured := func(name string, v gjson.Result) {
		var b strings.Builder
		b.WriteString(name)
		n += 2 * structuredText(&b, v)
		text(b.String())
	}
	var part func(p gjson.Result)
	part = func(p gjson.Result) {
		n += 2
		switch {
		case p.Get("text").Exists():
			text(p.Get("text").String())
		case p.Get("functionCall").Exists():
			structured(p.Get("functionCall.name").String(), p.Get("functionCall.args"))
		case p.Get("functionResponse").Exists():
			structured(p.Get("functionResponse.name").String(), p.Get("functionResponse.response"))
		case p.Get("inlineData").Exists():
			n += 258
		default:
			text(p.Raw)
		}
	}
	root.Get("contents").ForEach(func(_, ct gjson.Result) bool {
		n += 4
		ct.Get("parts").ForEach(func(_, p gjson.Result) bool {
			part(p)
			return true
		})
		return true
	})
	root.Get("systemInstruction.parts").ForEach(func(_, p gjson.Result) bool {
		part(p)
		return true
	})
	root.Get("tools").ForEach(func(_, t gjson.Result) bool {
		text(t.Raw)
		return true
	})
	return n
}

// structuredText writes v as a model reads structured data (CountGemini):
// {key:value,…}, [value,…], strings unescaped, other values as their
// JSON. It returns how many strings it wrote.
func structuredText(b *strings.Builder, v gjson.Result) int {
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
		n += structuredText(b, x)
		return true
	})
	b.WriteByte(end)
	return n
}
