// Package gemini is the codec of Google's Gemini API format
// (POST /v1beta/models/{model}:generateContent, :streamGenerateContent and
// :countTokens), the API Gemini CLI speaks.
//
// The model is in the request's path, not its body: the route hands it to
// the codec (WithModel, view.PathModel) and the codec it gets back scans
// requests of that model. Streaming is in the path too, so a ping of a
// streamed request goes to the unstreamed method (PingPath).
//
// The conversation is the top-level "contents" array; "systemInstruction",
// "tools", "toolConfig", "generationConfig", "safetySettings" and every
// other field stay byte for byte as received (systemInstruction and tools
// are the head the provider caches first). The engine sees:
//   - the head: the first content when it is a user content answering no
//     call; when it is followed by a model content making no call and then
//     by a user content answering none (Gemini CLI's set-up exchange, then
//     the task), those join it;
//   - steps: a user content alone, or a model content with the next user
//     content when that one carries the functionResponse parts answering
//     its functionCall parts (glued);
//   - outputs: each functionResponse part whose response holds one string
//     field ({"output": "…"}, as Gemini CLI sends) — a digest replaces that
//     string; a user content's own text when it is one text part;
//   - frozen: model contents carrying thought parts, a thoughtSignature, or
//     code execution are never edited (dropped only with their step); an
//     output of another shape (a structured response, media parts) is never
//     digested.
//
// A request naming cachedContent (explicit caching) is forwarded
// untouched (view.Request.Untouchable): its contents continue a cache the
// provider keeps, whose prefix the proxy cannot see, and the API refuses
// tools or a system instruction beside it.
//
// Summaries and markers are user contents with one text part. The API
// wants user and model turns to alternate: where a splice would put two
// contents of one role side by side, it puts a short turn of the other
// role between them ("Got it." from the model, "Continue." from the user).
//
// The REST API takes both the camelCase and the snake_case spelling of
// every field; the codec reads both.
//
// A Codec is safe for concurrent use.
package gemini

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/condense-proxy/condense-proxy/codec/internal/items"
	"github.com/condense-proxy/condense-proxy/codec/internal/textvalue"
	"github.com/condense-proxy/condense-proxy/jsonscan"
	"github.com/condense-proxy/condense-proxy/tokenizer"
	"github.com/condense-proxy/condense-proxy/view"
)

// Format is the codec's wire format name.
const Format = "gemini"

// Codec reads and writes Gemini requests. The zero model is a codec no
// route bound: its requests have no model.
type Codec struct {
	counter *tokenizer.Counter
	model   string
}

var (
	_ view.Codec     = (*Codec)(nil)
	_ view.PathModel = (*Codec)(nil)
)

// New returns the Gemini codec, counting with counter.
func New(counter *tokenizer.Counter) *Codec { return &Codec{counter: counter} }

// WithModel implements view.PathModel: the codec of requests to model,
// the model named in their path ("gemini-2.5-pro"; a "models/" prefix is
// dropped).
func (c *Codec) WithModel(model string) view.Codec {
	b := *c
	b.model = strings.TrimPrefix(model, "models/")
	return &b
}

// Model is the model the codec was bound to ("" for none).
func (c *Codec) Model() string { return c.model }

// Format implements view.Codec.
func (*Codec) Format() string { return Format }

// field returns the value of key in obj under its camelCase or its
// snake_case name (the last spelling present wins, as a decoder that
// knows both would take the later one).
func field(obj gjson.Result, camel, snake string) gjson.Result {
	v := obj.Get(camel)
	if s := obj.Get(snake); s.Exists() && (!v.Exists() || s.Index > v.Index) {
		return s
	}
	return v
}

// Scan implements view.Codec: one validating pass over the body finds the
// top-level fields and the contents; each content is counted with the
// per-item cache, the system instruction and the tools with it too. The
// model is the one the codec was bound to (the path's).
//
// A body that is not a JSON object, has an escaped top-level key, or has
// no contents array (or an empty one) is view.ErrNotRequest.
func (c *Codec) Scan(body []byte, encodingFor func(model string) string) (*view.Request, error) {
	enc := func(string) string { return encodingFor(c.model) }
	r, obj, e, err := items.Scan(c.counter, body, "contents", "gemini-content", false, enc, c.countContent)
	if err != nil {
		return nil, err
	}
	r.Model = c.model
	r.Total += c.countRest(e, r, obj)
	for _, k := range []string{"cachedContent", "cached_content"} {
		if sp, ok := obj.Get(k); ok && gjson.Parse(r.Span(sp[0], sp[1])).String() != "" {
			r.Untouchable = "names cachedContent (explicit caching): the provider holds the prefix; forwarded as received"
		}
	}
	r.Head = scanHead(r)
	if n := len(r.Items); n > 0 {
		r.Compaction = lastCompaction(r.Raw(n - 1))
	}
	return r, nil
}

// scanHead is the head as Scan sees it (see the package comment); Parse
// confirms it.
func scanHead(r *view.Request) int {
	if len(r.Items) == 0 || !isTask(r.Raw(0)) {
		return 0
	}
	if len(r.Items) >= 3 && isModelText(r.Raw(1)) && isTask(r.Raw(2)) {
		return 3
	}
	return 1
}

// isTask reports whether raw is a user content answering no call.
func isTask(raw string) bool {
	g := gjson.Parse(raw)
	if !g.IsObject() || roleOf(g) != "user" {
		return false
	}
	parts := g.Get("parts")
	if !parts.IsArray() || len(parts.Array()) == 0 {
		return false
	}
	task := true
	parts.ForEach(func(_, p gjson.Result) bool {
		task = !field(p, "functionResponse", "function_response").Exists()
		return task
	})
	return task
}

// isModelText reports whether raw is a model content with no call.
func isModelText(raw string) bool {
	g := gjson.Parse(raw)
	if !g.IsObject() || roleOf(g) != "model" {
		return false
	}
	text := true
	g.Get("parts").ForEach(func(_, p gjson.Result) bool {
		text = !field(p, "functionCall", "function_call").Exists()
		return text
	})
	return text
}

// roleOf is a content's role: "model", or "user" (the API takes a
// content without a role, and the legacy "function", for the user's).
func roleOf(g gjson.Result) string {
	if g.Get("role").String() == "model" {
		return "model"
	}
	return "user"
}

// Note implements view.Codec: a user content with one text part.
func (*Codec) Note(text string) []byte {
	t := textvalue.String(text)
	b := make([]byte, 0, len(t)+48)
	b = append(b, `{"role":"user","parts":[{"text":`...)
	b = append(b, t...)
	return append(b, "}]}"...)
}

// Fillers are the turns a splice puts between two contents of one role.
var (
	modelFiller = []byte(`{"role":"model","parts":[{"text":"Got it."}]}`)
	userFiller  = []byte(`{"role":"user","parts":[{"text":"Continue."}]}`)
)

func fillerOf(role string) []byte {
	if role == "user" {
		return modelFiller
	}
	return userFiller
}

// Splice implements view.Codec: the contents array is rewritten as the
// kept contents and the inserted ones, a filler turn where two contents
// of one role would meet (see the package comment); every other byte of
// the body stays.
func (c *Codec) Splice(r *view.Request, e view.Edit) ([]byte, error) {
	if r.Array[1] == 0 {
		return nil, errors.New("gemini: no contents array to splice")
	}
	if e.From < 0 || e.From > e.To || e.To > len(r.Items) {
		return nil, errors.New("gemini: splice out of range")
	}
	return view.SpliceArray(r, r.Array, c.Align(r, e))
}

var _ view.Aligner = (*Codec)(nil)

// Align implements view.Aligner: e with the filler turns that keep the
// roles alternating across its seams (alternate); aligning an aligned
// edit adds none.
func (*Codec) Align(r *view.Request, e view.Edit) view.Edit {
	e.Insert = alternate(r, e)
	return e
}

var _ view.Deriver = (*Codec)(nil)

// Derive implements view.Deriver: Scan of out laid out as l (an aligned
// edit's: Align). The contents carried keep their counts; the new or
// changed ones are counted as Scan counts them; the system instruction,
// the tools and the rest are carried.
func (c *Codec) Derive(in *view.Request, out []byte, l view.Layout) (*view.Request, error) {
	r, err := items.Derive(c.counter, in, out, l, "gemini-content", false, c.countContent)
	if err != nil {
		return nil, err
	}
	r.Untouchable = in.Untouchable
	r.Head = scanHead(r)
	if n := len(r.Items); n > 0 {
		r.Compaction = lastCompaction(r.Raw(n - 1))
	}
	return r, nil
}

// alternate returns e's inserts with the fillers that keep the roles
// alternating across the seams of the edit.
func alternate(r *view.Request, e view.Edit) [][]byte {
	if len(e.Insert) == 0 && e.From == e.To {
		return e.Insert
	}
	prev := ""
	if e.From > 0 {
		prev = roleOf(gjson.Parse(r.Raw(e.From - 1)))
	}
	var out [][]byte
	for _, ins := range e.Insert {
		role := roleOf(gjson.ParseBytes(ins))
		if role == prev {
			out = append(out, fillerOf(role))
		}
		out = append(out, ins)
		prev = role
	}
	if e.To < len(r.Items) && prev != "" && roleOf(gjson.Parse(r.Raw(e.To))) == prev {
		out = append(out, fillerOf(prev))
	}
	return out
}

// Error implements view.Codec: Google's error body,
// {"error":{"code","message","status"}}, its status named by the HTTP
// status as Google names them.
func (*Codec) Error(status int, _, msg string) []byte {
	b, _ := json.Marshal(map[string]any{"error": map[string]any{"code": status, "message": msg, "status": statusName(status)}})
	return b
}

// statusName is the google.rpc.Code name Google's APIs give an HTTP
// status.
func statusName(status int) string {
	switch status {
	case http.StatusBadRequest, http.StatusRequestEntityTooLarge:
		return "INVALID_ARGUMENT"
	case http.StatusUnauthorized:
		return "UNAUTHENTICATED"
	case http.StatusForbidden:
		return "PERMISSION_DENIED"
	case http.StatusNotFound:
		return "NOT_FOUND"
	case http.StatusConflict:
		return "ABORTED"
	case http.StatusTooManyRequests:
		return "RESOURCE_EXHAUSTED"
	case 499:
		return "CANCELLED"
	case http.StatusNotImplemented:
		return "UNIMPLEMENTED"
	case http.StatusServiceUnavailable, http.StatusBadGateway:
		return "UNAVAILABLE"
	case http.StatusGatewayTimeout, http.StatusRequestTimeout:
		return "DEADLINE_EXCEEDED"
	}
	if status >= 500 {
		return "INTERNAL"
	}
	return "FAILED_PRECONDITION"
}

// validObject reports whether raw is a JSON object.
func validObject(raw string) bool { return len(raw) > 0 && raw[0] == '{' && jsonscan.Valid(raw) }
