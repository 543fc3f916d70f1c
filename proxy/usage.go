package proxy

import (
	"io"
	"log/slog"
	"math"
	"net/http"
	"strings"

	"github.com/condense-proxy/condense-proxy/condense"
	"github.com/condense-proxy/condense-proxy/view"
)

// Measured usage. Every answer the upstream gives a request of a
// condensing route (count_tokens excepted) is read, as its bytes arrive
// from the upstream — before the proxy rewrites anything in it (the
// recall loop's) — by its codec's view.AnswerReader: nothing is buffered
// beyond what that reader bounds, and the bytes reach the agent as they
// would without it. When the recall loop asks the upstream again, each
// round's answer is read too: what is measured is the sum of every
// answer the upstream billed for the agent's one request.
//
// What the answers report is recorded (log line, /metrics, the live page)
// only when the request was billed as the estimate counts it (the agent
// got a success, not a refusal, a failure or a cut stream), every answer
// was read to its end, and every one reported usage; a billed request
// whose answers said nothing of it is "not reported". An answer in a
// Content-Encoding (one the proxy did not ask to be undone) is not
// readable: not reported either. The proxy asks the upstream for
// unencoded answers on these routes (the transport negotiates and undoes
// its own compression), so the agent always gets identity-encoded ones.

// Prices are a model's prompt-cache prices as multiples of its input
// price, for pricing measured usage as the estimate prices its own.
type Prices struct {
	CacheRead, CacheWrite float64
	// CacheWrite1h prices the writes an answer says are for an hour
	// (Anthropic's 1-hour cache).
	CacheWrite1h float64
}

// defaultPrices are the engine's defaults (Anthropic's 5-minute cache):
// used when Options.Prices is nil.
var defaultPrices = Prices{CacheRead: 0.1, CacheWrite: 1.25, CacheWrite1h: 2}

// Measured is what the upstream's answers to one request reported of its
// cost.
type Measured struct {
	// Reported: every answer read reported usage; false: "not
	// reported", and nothing else is set.
	Reported bool
	// Usage is the sum over the answers read.
	Usage view.Usage
	// Answers is how many upstream answers were read: 1, plus the recall
	// rounds the proxy asked.
	Answers int
	// FirstPrompt is the first answer's prompt tokens: the request the
	// estimate is of (Report.TokensAfter).
	FirstPrompt int
	// Bill is the input bill in units of the model's input price: cache
	// reads at the read price, 1-hour writes at theirs, other writes at
	// the write price, uncached tokens at 1.
	Bill float64
}

// EstimateError is the engine's count of the forwarded request over the
// provider's count of its prompt, less 1 (0.05: the estimate was 5% over);
// ok is false when either is unknown.
func (m *Measured) EstimateError(rep *condense.Report) (float64, bool) {
	if m == nil || !m.Reported || m.FirstPrompt <= 0 || rep == nil || rep.TokensAfter <= 0 {
		return 0, false
	}
	return float64(rep.TokensAfter)/float64(m.FirstPrompt) - 1, true
}

// billOf prices u.
func billOf(u view.Usage, p Prices) float64 {
	w1h := min(u.CacheWrite1h, u.CacheWrite)
	return p.CacheRead*float64(u.CacheRead) + p.CacheWrite*float64(u.CacheWrite-w1h) +
		p.CacheWrite1h*float64(w1h) + float64(u.Uncached)
}

// meteredBody is an upstream answer's body read through its codec's
// AnswerReader as it passes.
type meteredBody struct {
	io.ReadCloser
	meter    view.Meter // nil: the answer cannot be read (encoded)
	ar       view.AnswerReader
	complete bool // read to io.EOF
}

func (m *meteredBody) Read(b []byte) (int, error) {
	n, err := m.ReadCloser.Read(b)
	if n > 0 {
		m.write(b[:n])
	}
	if err == io.EOF {
		m.complete = true
	}
	return n, err
}

// write hands b to the answer's reader, made at the answer's first
// significant byte: a JSON object ('{') or server-sent events (anything
// else), whatever the Content-Type says. Leading white space (and a BOM)
// means nothing to either.
func (m *meteredBody) write(b []byte) {
	if m.ar == nil {
		t := strings.TrimLeft(string(b), " \t\r\n\uFEFF")
		if t == "" {
			return
		}
		m.ar = m.meter.AnswerReader(t[0] != '{')
		b = b[len(b)-len(t):]
	}
	m.ar.Write(b)
}

// meterAnswer reads res's body as it passes when res answers a request
// whose usage is measured: a billable request of a codec that reads
// answers, answered with success. Called on the request's goroutine,
// for the upstream's first answer and for each recall round's.
func (p *Proxy) meterAnswer(ri *reqInfo, res *http.Response) {
	if !ri.billable || ri.report == nil {
		return
	}
	meter, ok := ri.codec.(view.Meter)
	if !ok {
		return
	}
	mb := &meteredBody{ReadCloser: res.Body, meter: meter}
	ri.answers = append(ri.answers, mb)
	if res.StatusCode < 200 || res.StatusCode >= 300 {
		return // its status decides: the request is not billed
	}
	if enc := res.Header.Get("Content-Encoding"); enc != "" && !strings.EqualFold(enc, "identity") {
		mb.meter = nil // not readable: not reported
		return
	}
	res.Body = mb
}

// measure is what the answers of a billed request reported: nil when
// nothing was read of them (none metered), or one was cut.
func (p *Proxy) measure(ri *reqInfo) *Measured {
	if len(ri.answers) == 0 {
		return nil
	}
	m := &Measured{Reported: true, Answers: len(ri.answers)}
	for i, a := range ri.answers {
		if a.meter != nil && !a.complete {
			return nil // cut: not billed as the estimate counts it
		}
		if a.meter == nil || a.ar == nil {
			m.Reported = false
			continue
		}
		u := a.ar.Outcome().Usage
		if !u.Known {
			m.Reported = false
			continue
		}
		if i == 0 {
			m.FirstPrompt = u.Prompt()
		}
		m.Usage.Known = true
		m.Usage.CacheRead += u.CacheRead
		m.Usage.CacheWrite += u.CacheWrite
		m.Usage.CacheWrite1h += min(u.CacheWrite1h, u.CacheWrite)
		m.Usage.Uncached += u.Uncached
		m.Usage.Output += u.Output
	}
	if !m.Reported {
		return &Measured{Answers: m.Answers}
	}
	prices := defaultPrices
	if p.opts.Prices != nil && ri.report != nil {
		prices = p.opts.Prices(ri.report.Model)
	}
	m.Bill = billOf(m.Usage, prices)
	return m
}

// measuredAttrs are the log line's measured fields.
func measuredAttrs(m *Measured, rep *condense.Report) []slog.Attr {
	if m == nil {
		return nil
	}
	if !m.Reported {
		return []slog.Attr{slog.String("measured", "not reported")}
	}
	u := m.Usage
	attrs := []slog.Attr{
		slog.Int("measured_input", u.Prompt()),
		slog.Int("measured_cache_read", u.CacheRead),
		slog.Int("measured_cache_write", u.CacheWrite),
	}
	if u.CacheWrite1h > 0 {
		attrs = append(attrs, slog.Int("measured_cache_write_1h", u.CacheWrite1h))
	}
	attrs = append(attrs, slog.Int("measured_output", u.Output), slog.Float64("measured_bill", round1(m.Bill)))
	if m.Answers > 1 {
		attrs = append(attrs, slog.Int("measured_answers", m.Answers))
	}
	if e, ok := m.EstimateError(rep); ok {
		attrs = append(attrs, slog.Float64("estimate_error", math.Round(e*1000)/1000))
	}
	return attrs
}
