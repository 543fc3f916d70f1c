// Package scripted is the scripted model behind `condense-proxy demo`: an
// upstream that answers the four APIs the proxy speaks — chat
// completions (POST /v1/chat/completions), Anthropic Messages (POST
// /v1/messages and /v1/messages/count_tokens), OpenAI Responses (POST
// /v1/responses) and Gemini (POST /v1beta/models/{model}:generateContent,
// :streamGenerateContent and :countTokens, and under /v1/) —, as JSON or
// as server-sent events when the request streams, in the shapes the
// official SDKs, Claude Code, Codex and Gemini CLI read. No LLM is
// involved: the answers are made from the request.
//
// A request is read with the codec of its API (codec/chat,
// codec/messages, codec/responses, codec/gemini: Scan, Parse, Text); the model then
// picks one of these answers (model.go):
//   - a summary, when the request is one of condense-proxy's summarizer
//     calls (its transcript prompt, or a summary asked in place) or an
//     agent's own compaction: the sections the summarizer prompt asks
//     for, filled with lines taken from the text (summary.go);
//   - a tool call, when the agent offers a shell tool (Claude Code's
//     Bash, Codex's exec_command, qwen-code's run_shell_command…) and the
//     turn has made fewer than two: `ls`, then `head` of a file it listed;
//   - otherwise a short text that reports what the calls found.
//
// The call ids carry the step they were made at, so the model finds where
// a turn stands even when the proxy has condensed its older steps away.
// HEAD / and GET / answer 200, GET /v1/models lists one model (in
// Anthropic's shape when the request carries anthropic-version); any
// other path is a 404 in the API's error shape.
//
// An Upstream is safe for concurrent use.
package scripted

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/tidwall/gjson"

	"github.com/condense-proxy/condense-proxy/codec/chat"
	"github.com/condense-proxy/condense-proxy/codec/gemini"
	"github.com/condense-proxy/condense-proxy/codec/messages"
	"github.com/condense-proxy/condense-proxy/codec/responses"
	"github.com/condense-proxy/condense-proxy/tokenizer"
	"github.com/condense-proxy/condense-proxy/view"
)

// ModelName is the model GET /v1/models lists, and the one answers name
// when the request names none.
const ModelName = "condense-demo"

// Options configures an Upstream. Zero values pick the defaults.
type Options struct {
	// Delay is waited before each answer, as a provider takes a moment:
	// an upstream that answers within microseconds exposes a stdlib
	// reverse-proxy race (golang/go#40747). Default 2ms; negative: none.
	Delay time.Duration
	// MaxBody bounds a request body; a larger one is answered 413.
	// Default 64 MiB.
	MaxBody int64
	// Logger gets one line per request refused (400, 404, 413). Nil:
	// nothing is logged.
	Logger *slog.Logger
	// Counter counts the tokens the answers report as usage. Nil: a
	// Counter of its own.
	Counter *tokenizer.Counter
}

// Upstream is the scripted upstream, an http.Handler.
type Upstream struct {
	opts    Options
	counter *tokenizer.Counter
	chat    *chat.Codec
	msgs    *messages.Codec
	resp    *responses.Codec
	gem     *gemini.Codec
	now     func() time.Time
	cache   promptCache
}

var _ http.Handler = (*Upstream)(nil)

// New returns an Upstream.
func New(o Options) *Upstream {
	if o.Delay == 0 {
		o.Delay = 2 * time.Millisecond
	}
	if o.MaxBody <= 0 {
		o.MaxBody = 64 << 20
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Counter == nil {
		o.Counter = tokenizer.New(tokenizer.Options{})
	}
	return &Upstream{opts: o, counter: o.Counter, chat: chat.New(o.Counter), msgs: messages.New(o.Counter),
		resp: responses.New(o.Counter), gem: gemini.New(o.Counter), now: time.Now}
}

// encoding is the tokenizer encoding every request is counted with.
func encoding(string) string { return tokenizer.O200kBase }

// ServeHTTP implements http.Handler.
func (u *Upstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if model, method, ok := gemini.Route(r.URL.Path); ok {
		u.serveGemini(w, r, model, method)
		return
	}
	path := strings.TrimSuffix(r.URL.Path, "/")
	path = "/" + strings.TrimPrefix(strings.TrimPrefix(path, "/v1"), "/")
	switch path {
	case "/":
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			u.refuse(w, r, u.chat, http.StatusMethodNotAllowed, "invalid_request_error", "use GET or HEAD")
			return
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		io.WriteString(w, "condense-proxy demo: a scripted upstream (no LLM). POST /v1/chat/completions, /v1/messages, /v1/responses or /v1beta/models/{model}:generateContent.\n")
		return
	case "/models":
		if r.Method != http.MethodGet {
			u.refuse(w, r, u.chat, http.StatusMethodNotAllowed, "invalid_request_error", "use GET")
			return
		}
		u.models(w, r)
		return
	}
	api, ok := map[string]view.Codec{"/chat/completions": u.chat, "/messages": u.msgs, "/messages/count_tokens": u.msgs,
		"/responses": u.resp}[path]
	if !ok {
		var c view.Codec = u.chat
		switch {
		case strings.HasPrefix(path, "/messages") || r.Header.Get("Anthropic-Version") != "":
			c = u.msgs
		case strings.HasPrefix(r.URL.Path, "/v1beta/"):
			c = u.gem
		}
		u.refuse(w, r, c, http.StatusNotFound, "not_found_error", "the demo's scripted upstream has no "+r.URL.Path)
		return
	}
	if r.Method != http.MethodPost {
		u.refuse(w, r, api, http.StatusMethodNotAllowed, "invalid_request_error", "use POST")
		return
	}
	body, req, ok := u.request(w, r, api)
	if !ok {
		return
	}
	if path == "/messages/count_tokens" {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"input_tokens":%d}`, req.Total)
		return
	}
	u.respond(w, r, api, req, streams(body), includeUsage(body))
}

// request reads and parses the body of r, a request of api, or answers
// the error (ok is false).
func (u *Upstream) request(w http.ResponseWriter, r *http.Request, api view.Codec) (body []byte, req *view.Request, ok bool) {
	body, err := io.ReadAll(io.LimitReader(r.Body, u.opts.MaxBody+1))
	if err != nil {
		u.refuse(w, r, api, http.StatusBadRequest, "invalid_request_error", "reading the body: "+err.Error())
		return nil, nil, false
	}
	if int64(len(body)) > u.opts.MaxBody {
		u.refuse(w, r, api, http.StatusRequestEntityTooLarge, "request_too_large", fmt.Sprintf("the body is over %d bytes", u.opts.MaxBody))
		return nil, nil, false
	}
	req, err = u.read(api, body)
	if err != nil {
		u.refuse(w, r, api, http.StatusBadRequest, "invalid_request_error", err.Error())
		return nil, nil, false
	}
	return body, req, true
}

// respond answers req, a request of api, after the answer's delay.
func (u *Upstream) respond(w http.ResponseWriter, r *http.Request, api view.Codec, req *view.Request, stream, usage bool) {
	if err := u.wait(r.Context()); err != nil {
		return // the client left
	}
	a := u.answer(api, req)
	a.cacheRead, a.cacheWrite = u.cache.use(req, u.now())
	a.model = req.Model
	if a.model == "" {
		a.model = ModelName
	}
	if err := u.write(w, api, a, stream, usage); err != nil {
		// Headers are sent: abort the connection rather than end the
		// answer as if it were complete.
		panic(http.ErrAbortHandler)
	}
}

// serveGemini answers a Gemini model method: the answer as one
// GenerateContentResponse, streamed as server-sent events with alt=sse
// (as a JSON array of them without), or the request's count.
func (u *Upstream) serveGemini(w http.ResponseWriter, r *http.Request, model, method string) {
	api := u.gem.WithModel(model)
	if r.Method != http.MethodPost {
		u.refuse(w, r, api, http.StatusMethodNotAllowed, "invalid_request_error", "use POST")
		return
	}
	_, req, ok := u.request(w, r, api)
	if !ok {
		return
	}
	if method == "countTokens" {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"totalTokens":%d}`, req.Total)
		return
	}
	u.respond(w, r, api, req, method == "streamGenerateContent", r.URL.Query().Get("alt") == "sse")
}

// read scans and parses a request with its API's codec. A Responses
// request whose input is a plain string is read as one user message.
func (u *Upstream) read(api view.Codec, body []byte) (*view.Request, error) {
	r, err := api.Scan(body, encoding)
	if errors.Is(err, view.ErrNotRequest) && api == u.resp {
		if text, ok := stringInput(body); ok {
			r, err = api.Scan(wrapInput(body, text), encoding)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("not a %s request: %w", api.Format(), err)
	}
	if r.Compaction == responses.CompactionTrigger && len(r.Items) > 1 {
		// The trigger is no conversation item: the conversation is
		// what comes before it.
		n := len(r.Items)
		before, err := api.Splice(r, view.Edit{From: n - 1, To: n})
		if err != nil {
			return nil, fmt.Errorf("the conversation before compaction_trigger: %w", err)
		}
		if r, err = u.read(api, before); err != nil {
			return nil, err
		}
		r.Compaction = responses.CompactionTrigger
		return r, nil
	}
	if err := api.Parse(r); err != nil {
		// A conversation the codec does not condense is still answered,
		// as the proxy forwards it: without its system and developer
		// items (Claude Code sends system messages between the others,
		// Codex its tools as a developer item of a type the codec does
		// not know), or else unparsed, with a text answer.
		u.opts.Logger.Debug("scripted upstream: the codec refuses the conversation", "err", err)
		if side := withoutSideItems(r); side != nil {
			if s, err := api.Scan(side, encoding); err == nil && api.Parse(s) == nil {
				s.Total, s.Compaction = r.Total, r.Compaction
				return s, nil
			}
		}
		r.Parsed = false
	}
	return r, nil
}

// withoutSideItems returns r's body without the system and developer
// items of its conversation, or nil when it has none.
func withoutSideItems(r *view.Request) []byte {
	var kept []string
	for i := range r.Items {
		if role := gjson.Get(r.Raw(i), "role").Str; role != view.RoleSystem && role != view.RoleDeveloper {
			kept = append(kept, r.Raw(i))
		}
	}
	if len(kept) == len(r.Items) || len(kept) == 0 {
		return nil
	}
	b := append([]byte(nil), r.Body[:r.Array[0]]...)
	b = append(b, '[')
	b = append(b, strings.Join(kept, ",")...)
	b = append(b, ']')
	return append(b, r.Body[r.Array[1]:]...)
}

// wait waits the answer's delay, or until ctx ends.
func (u *Upstream) wait(ctx context.Context) error {
	if u.opts.Delay <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(u.opts.Delay)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// refuse answers an error in c's format and logs it once.
func (u *Upstream) refuse(w http.ResponseWriter, r *http.Request, c view.Codec, status int, typ, msg string) {
	u.opts.Logger.Warn("scripted upstream refused a request", "method", r.Method, "path", r.URL.Path, "status", status, "err", msg)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(c.Error(status, typ, msg))
}

// models answers GET /v1/models.
func (u *Upstream) models(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	if r.Header.Get("Anthropic-Version") != "" {
		fmt.Fprintf(w, `{"data":[{"type":"model","id":%q,"display_name":"condense-proxy demo (scripted)","created_at":"2026-01-01T00:00:00Z"}],"has_more":false,"first_id":%q,"last_id":%q}`,
			ModelName, ModelName, ModelName)
		return
	}
	fmt.Fprintf(w, `{"object":"list","data":[{"id":%q,"object":"model","created":1767225600,"owned_by":"condense-proxy-demo"}]}`, ModelName)
}

// write sends answer a in api's format, streamed or not.
func (u *Upstream) write(w http.ResponseWriter, api view.Codec, a answer, stream, usage bool) error {
	a.outputTokens = max(1, u.counter.Text(tokenizer.O200kBase, a.text+a.compaction)+u.callTokens(a))
	if api.Format() == gemini.Format {
		return u.writeGemini(w, a, stream, usage)
	}
	if !stream {
		w.Header().Set("Content-Type", "application/json")
		var b []byte
		switch api {
		case u.msgs:
			b = messagesJSON(a)
		case u.resp:
			b = responsesJSON(a, u.now())
		default:
			b = chatJSON(a, u.now())
		}
		_, err := w.Write(b)
		return err
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	sw := newSSE(w)
	switch api {
	case u.msgs:
		messagesSSE(sw, a)
	case u.resp:
		responsesSSE(sw, a, u.now())
	default:
		chatSSE(sw, a, u.now(), usage)
	}
	return sw.err
}

// writeGemini sends a as Gemini answers: one GenerateContentResponse; a
// stream (sse: alt=sse) as server-sent events, without alt=sse as a JSON
// array of the same chunks.
func (u *Upstream) writeGemini(w http.ResponseWriter, a answer, stream, sse bool) error {
	if stream && sse {
		w.Header().Set("Content-Type", "text/event-stream")
		w.Header().Set("Cache-Control", "no-cache")
		sw := newSSE(w)
		geminiSSE(sw, a)
		return sw.err
	}
	w.Header().Set("Content-Type", "application/json")
	b := geminiJSON(a)
	if stream {
		b = append(append([]byte{'['}, b...), ']')
	}
	_, err := w.Write(b)
	return err
}

func (u *Upstream) callTokens(a answer) int {
	if a.call == nil {
		return 0
	}
	return u.counter.Text(tokenizer.O200kBase, a.call.name+a.call.args)
}

// sse writes server-sent events, flushing each; the first write error
// is kept and the later writes skipped.
type sse struct {
	w     io.Writer
	flush func()
	err   error
}

// newSSE returns an sse writing to w, flushing each event when w can.
func newSSE(w http.ResponseWriter) *sse {
	sw := &sse{w: w}
	if f, ok := w.(http.Flusher); ok {
		sw.flush = f.Flush
	}
	return sw
}

// event writes one event: its name (none when empty) and data.
func (s *sse) event(name string, data []byte) {
	if s.err != nil {
		return
	}
	var b strings.Builder
	if name != "" {
		b.WriteString("event: " + name + "\n")
	}
	b.WriteString("data: ")
	b.Write(data)
	b.WriteString("\n\n")
	if _, s.err = io.WriteString(s.w, b.String()); s.err == nil && s.flush != nil {
		s.flush()
	}
}
