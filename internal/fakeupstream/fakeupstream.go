// Package fakeupstream is a strict stand-in for an OpenAI-compatible
// upstream, for tests, benchmarks and the replay evaluation.
//
// It rejects with 400 what OpenAI rejects in a chat-completions request:
// an unknown role, a tool message that answers no preceding tool call, an
// assistant tool call left without its tool answer, a request with no
// messages, and max_tokens or a temperature other than 1 for a reasoning
// model (the o-series and gpt-5 families). It records every request it receives, answers chat requests
// with a short completion (streamed as server-sent events when asked) and
// lets a test script the answer to summarizer requests.
package fakeupstream

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/tidwall/gjson"
)

// Received is one request as the upstream saw it.
type Received struct {
	Method string
	Path   string
	Query  string // raw query, without "?" ("beta=true")
	Header http.Header
	Body   []byte
	Status int // what the fake answered
	// Tokens is the fake's approximate count of the request's input
	// tokens (Messages and Responses fakes only; see CountMessages and
	// CountResponses); 0 when not counted.
	Tokens int
	// Error is the message of the error the fake answered, if it did.
	Error string
	// Answer is the text answered to a summarizer call (Messages and
	// Responses fakes).
	Answer string
}

// Server is the fake upstream's handler. The zero value is not usable; call
// New. Safe for concurrent use.
type Server struct {
	mu        sync.Mutex
	received  []Received
	summaries [][]byte // bodies of summarizer calls, kept across Reset
	answers   []string // texts answered to summarizer calls

	// Summarize, if set, answers chat requests whose system prompt marks
	// them as summarizer calls (see IsSummaryRequest); it returns the
	// status and the assistant text. Nil: the default completion.
	Summarize func(body []byte) (status int, text string)

	// ChunkDelay is the pause between streamed chunks. Default 0.
	ChunkDelay time.Duration
	// Chunks is how many content chunks a streamed answer has. Default 3.
	Chunks int
	// Usage, if set, says what each answer reports of its prompt (its
	// cache reads and writes), and a stream reports it in a last chunk
	// when the request asks for it (stream_options.include_usage), as
	// OpenAI does. Nil: a JSON answer reports a prompt of 1 token, a
	// stream no usage.
	Usage func(body []byte) Usage
}

// New returns a fake upstream.
func New() *Server { return &Server{Chunks: 3} }

// Received returns a copy of what the server received so far.
func (s *Server) Received() []Received {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Received(nil), s.received...)
}

// Reset forgets what was received (but not the summarizer calls).
func (s *Server) Reset() {
	s.mu.Lock()
	s.received = nil
	s.mu.Unlock()
}

// Take removes and returns the received requests whose header key has
// value v (for callers sharing one fake).
func (s *Server) Take(key, v string) []Received {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Received
	kept := s.received[:0]
	for _, r := range s.received {
		if r.Header.Get(key) == v {
			out = append(out, r)
		} else {
			kept = append(kept, r)
		}
	}
	s.received = kept
	return out
}

// TakeSummaries returns the bodies of the summarizer calls received since
// the last call, and forgets them (and their answers).
func (s *Server) TakeSummaries() [][]byte {
	out, _ := s.TakeSummaryCalls()
	return out
}

// TakeSummaryCalls returns the bodies of the summarizer calls received
// since the last call and the texts answered to those that succeeded, and
// forgets them.
func (s *Server) TakeSummaryCalls() (bodies [][]byte, answers []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	bodies, answers = s.summaries, s.answers
	s.summaries, s.answers = nil, nil
	return bodies, answers
}

// SummaryMarker is the phrase by which IsSummaryRequest recognises a
// condense-proxy summarizer request.
const SummaryMarker = "condense-proxy summarizer"

// IsSummaryRequest reports whether a chat body is a summarizer call.
func IsSummaryRequest(body []byte) bool {
	return strings.Contains(string(body), SummaryMarker)
}

// maxReceived bounds the record: a long-running user (a soak test) that
// never resets keeps only the newest entries.
const maxReceived = 2000

func (s *Server) record(r *http.Request, body []byte, status int) {
	s.mu.Lock()
	if len(s.received) >= maxReceived {
		s.received = append(s.received[:0], s.received[maxReceived/2:]...)
	}
	s.received = append(s.received, Received{Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery, Header: r.Header.Clone(), Body: body, Status: status})
	s.mu.Unlock()
}

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		s.record(r, body, 400)
		writeError(w, 400, "reading body: "+err.Error())
		return
	}
	if !strings.HasSuffix(r.URL.Path, "/chat/completions") {
		s.record(r, body, 200)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"object":"list","path":%q,"data":[]}`, r.URL.Path)
		return
	}
	var req struct {
		Model    string            `json:"model"`
		Stream   bool              `json:"stream"`
		Messages []json.RawMessage `json:"messages"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		s.record(r, body, 400)
		writeError(w, 400, "We could not parse the JSON body of your request.")
		return
	}
	if err := CheckParams(body); err != nil {
		s.record(r, body, 400)
		writeError(w, 400, err.Error())
		return
	}
	if err := Validate(req.Messages); err != nil {
		s.record(r, body, 400)
		writeError(w, 400, err.Error())
		return
	}
	text := "Done."
	if IsSummaryRequest(body) {
		s.mu.Lock()
		s.summaries = append(s.summaries, body)
		s.mu.Unlock()
	}
	if s.Summarize != nil && IsSummaryRequest(body) {
		status, t := s.Summarize(body)
		if status != 200 {
			s.record(r, body, status)
			writeError(w, status, "summarizer failure")
			return
		}
		text = t
	}
	if IsSummaryRequest(body) {
		s.mu.Lock()
		s.answers = append(s.answers, text)
		s.mu.Unlock()
	}
	s.record(r, body, 200)
	usage := map[string]any{"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}
	u, withUsage := usageOf(s.Usage, body, 1)
	if withUsage {
		usage = map[string]any{"prompt_tokens": u.Prompt, "completion_tokens": 1, "total_tokens": u.Prompt + 1,
			"prompt_tokens_details": u.details()}
	}
	if req.Stream {
		if !withUsage || !gjson.GetBytes(body, "stream_options.include_usage").Bool() {
			usage = nil
		}
		s.stream(w, r, req.Model, text, usage)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	out, _ := json.Marshal(map[string]any{
		"id": "chatcmpl-fake", "object": "chat.completion", "created": 1, "model": req.Model,
		"choices": []any{map[string]any{"index": 0, "finish_reason": "stop",
			"message": map[string]any{"role": "assistant", "content": text}}},
		"usage": usage,
	})
	w.Write(out)
}

// stream answers with chunks; usage, when not nil, in a last chunk
// without choices (stream_options.include_usage).
func (s *Server) stream(w http.ResponseWriter, r *http.Request, model, text string, usage map[string]any) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	fl, _ := w.(http.Flusher)
	n := max(s.Chunks, 1)
	for i := 0; i < n; i++ {
		piece := ""
		if i == 0 {
			piece = text
		} else {
			piece = fmt.Sprintf(" part%d", i)
		}
		chunk, _ := json.Marshal(map[string]any{"id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": 1, "model": model,
			"choices": []any{map[string]any{"index": 0, "delta": map[string]any{"content": piece}}}})
		fmt.Fprintf(w, "data: %s\n\n", chunk)
		if fl != nil {
			fl.Flush()
		}
		if s.ChunkDelay > 0 {
			select {
			case <-time.After(s.ChunkDelay):
			case <-r.Context().Done():
				return
			}
		}
	}
	end, _ := json.Marshal(map[string]any{"id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": 1, "model": model,
		"choices": []any{map[string]any{"index": 0, "delta": map[string]any{}, "finish_reason": "stop"}}})
	fmt.Fprintf(w, "data: %s\n\n", end)
	if usage != nil {
		last, _ := json.Marshal(map[string]any{"id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": 1, "model": model,
			"choices": []any{}, "usage": usage})
		fmt.Fprintf(w, "data: %s\n\n", last)
	}
	fmt.Fprint(w, "data: [DONE]\n\n")
	if fl != nil {
		fl.Flush()
	}
}

func writeError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	out, _ := json.Marshal(map[string]any{"error": map[string]any{"message": msg, "type": "invalid_request_error"}})
	w.Write(out)
}

// Validate applies OpenAI's rules for a messages array: known roles; every
// assistant tool call answered by a tool message before the next non-tool
// message; every tool message answering a call of the assistant message
// just before its run of tool messages.
func Validate(raw []json.RawMessage) error {
	if len(raw) == 0 {
		return errors.New("'messages' must contain at least one message")
	}
	type call struct {
		ID string `json:"id"`
	}
	type msg struct {
		Role       string          `json:"role"`
		Content    json.RawMessage `json:"content"`
		ToolCalls  []call          `json:"tool_calls"`
		ToolCallID *string         `json:"tool_call_id"`
	}
	pending := map[string]bool{} // calls of the last assistant not yet answered
	inToolRun := false
	for i, r := range raw {
		var m msg
		if err := json.Unmarshal(r, &m); err != nil {
			return fmt.Errorf("messages[%d]: not an object", i)
		}
		switch m.Role {
		case "system", "developer", "user", "assistant", "tool", "function":
		default:
			return fmt.Errorf("messages[%d].role: invalid value %q", i, m.Role)
		}
		if m.Role == "tool" {
			if m.ToolCallID == nil || !pending[*m.ToolCallID] || !inToolRun {
				id := ""
				if m.ToolCallID != nil {
					id = *m.ToolCallID
				}
				return fmt.Errorf("messages[%d]: messages with role 'tool' must be a response to a preceeding message with 'tool_calls' (tool_call_id %q)", i, id)
			}
			delete(pending, *m.ToolCallID)
			continue
		}
		if len(pending) > 0 {
			ids := make([]string, 0, len(pending))
			for id := range pending {
				ids = append(ids, id)
			}
			return fmt.Errorf("messages[%d]: an assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: %s", i, strings.Join(ids, ", "))
		}
		inToolRun = false
		if m.Role == "assistant" && len(m.ToolCalls) > 0 {
			for _, c := range m.ToolCalls {
				if c.ID == "" {
					return fmt.Errorf("messages[%d].tool_calls: missing id", i)
				}
				pending[c.ID] = true
			}
			inToolRun = true
		}
	}
	if len(pending) > 0 {
		return fmt.Errorf("messages: an assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id' (%d unanswered at the end)", len(pending))
	}
	return nil
}
