package answer

import (
	"bytes"

	"github.com/tidwall/gjson"

	"github.com/condense-proxy/condense-proxy/view"
)

// Bounds of what a Reader holds: a JSON answer is read whole up to
// MaxJSON (past it the answer is not understood: its Outcome is empty); a
// server-sent event's line up to MaxLine (past it that event is skipped).
const (
	MaxJSON = 4 << 20
	MaxLine = 1 << 20
)

// Metered is what one format reads of an answer, for a Reader.
type Metered interface {
	// Event takes the JSON data of one server-sent event.
	Event(data gjson.Result)
	// Whole takes a JSON answer, read whole.
	Whole(answer gjson.Result)
	// Outcome is what the events or the answer said.
	Outcome() view.Outcome
}

// Reader is a view.AnswerReader over a format's Metered: it splits a
// stream into lines and hands each event's JSON data on, or gathers a
// JSON answer whole, within the bounds above.
type Reader struct {
	m    Metered
	sse  bool
	buf  []byte
	over bool // JSON past MaxJSON, or the current SSE line past MaxLine
}

var _ view.AnswerReader = (*Reader)(nil)

// NewReader returns a reader of one answer for m.
func NewReader(m Metered, sse bool) *Reader { return &Reader{m: m, sse: sse} }

// Write implements io.Writer; it never fails.
func (r *Reader) Write(b []byte) (int, error) {
	n := len(b)
	if !r.sse {
		if r.over || len(r.buf)+len(b) > MaxJSON {
			r.over, r.buf = true, nil
			return n, nil
		}
		r.buf = append(r.buf, b...)
		return n, nil
	}
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		chunk := b
		if i >= 0 {
			chunk = b[:i]
		}
		if !r.over {
			if len(r.buf)+len(chunk) > MaxLine {
				r.over, r.buf = true, r.buf[:0]
			} else {
				r.buf = append(r.buf, chunk...)
			}
		}
		if i < 0 {
			break
		}
		if !r.over {
			r.line(r.buf)
		}
		r.over, r.buf = false, r.buf[:0]
		b = b[i+1:]
	}
	return n, nil
}

// Held is how many bytes the reader holds (its bounds' test).
func (r *Reader) Held() int { return cap(r.buf) }

// line handles one SSE line (without its newline).
func (r *Reader) line(l []byte) {
	l = bytes.TrimSuffix(l, []byte{'\r'})
	data, ok := bytes.CutPrefix(l, []byte("data:"))
	if !ok {
		return // event names, comments, ids: the data says it all
	}
	data = bytes.TrimSpace(data)
	if len(data) == 0 || string(data) == "[DONE]" || !gjson.ValidBytes(data) {
		return
	}
	r.m.Event(gjson.ParseBytes(data))
}

// Outcome implements view.AnswerReader. A JSON answer is read here,
// whole.
func (r *Reader) Outcome() view.Outcome {
	if !r.sse && !r.over && gjson.ValidBytes(r.buf) {
		r.m.Whole(gjson.ParseBytes(r.buf))
		r.buf, r.over = nil, true // read once
	}
	return r.m.Outcome()
}

// OpenAIUsage reads chat's or Responses' usage object: the prompt's
// total with the cached part in its details, and the cache write where a
// provider reports one (OpenRouter's cache_write_tokens in the details;
// through LiteLLM from Anthropic, the cache read and write at the top
// level, with the write's 1h share). ok is false when u has no prompt
// total.
func OpenAIUsage(u gjson.Result) (usage view.Usage, ok bool) {
	prompt := u.Get("prompt_tokens")
	if !prompt.Exists() {
		prompt = u.Get("input_tokens")
	}
	if !prompt.Exists() {
		return view.Usage{}, false
	}
	read := max(u.Get("prompt_tokens_details.cached_tokens").Int(), u.Get("input_tokens_details.cached_tokens").Int(),
		u.Get("cache_read_input_tokens").Int())
	write := max(u.Get("cache_creation_input_tokens").Int(), u.Get("prompt_tokens_details.cache_write_tokens").Int(),
		u.Get("input_tokens_details.cache_write_tokens").Int())
	out := u.Get("completion_tokens")
	if !out.Exists() {
		out = u.Get("output_tokens")
	}
	return view.Usage{Known: true, CacheRead: int(read), CacheWrite: int(write),
		CacheWrite1h: int(min(write, u.Get("cache_creation.ephemeral_1h_input_tokens").Int())),
		Uncached:     int(max(0, prompt.Int()-read-write)), Output: int(out.Int())}, true
}
