package proxy

import (
	"net/http"
	"time"

	"github.com/condense-proxy/condense-proxy/condense"
	"github.com/condense-proxy/condense-proxy/memory"
)

// Recorder receives one Event per request on a condensable route (chat
// completions today) that reached the Condenser, once the upstream has
// answered and the response has been copied to the client (streams
// included). Requests refused before condensing (401, 413, an unreadable
// body) produce none.
//
// Record is called on the request's goroutine, so it must be fast, must not
// block and must be safe for concurrent use. Package ui's UI is one.
type Recorder interface {
	Record(ev Event)
}

// Event is what the proxy knows about one condensable request.
//
// The Report's slices and strings are not changed after Record is called,
// but strings may share memory with the request body (the model name, a
// message's role): a Recorder that keeps them longer than the call should
// copy them, or it keeps whole bodies alive.
type Event struct {
	// Time is when the request arrived.
	Time time.Time
	// Scope identifies the caller (never its credentials): the same value
	// the Condenser was given, which a Recorder compares with the scope of
	// whoever asks to see the request later.
	Scope string
	// Route is the handler: "chat" (POST /v1/chat/completions and
	// /chat/completions). Report.Format names the wire format.
	Route string
	// Mode is the mode asked for: X-Condense-Mode, or the default.
	Mode string
	// UserAgent is the request's User-Agent header (the agent).
	UserAgent string
	// Status is the status sent to the client (499: the client left).
	Status int
	// Duration is the time from arrival to the end of the response.
	Duration time.Duration
	// Report is what the Condenser did (model, tokens, changes, shapes).
	Report condense.Report
	// Recalls are the condense_recall calls the proxy answered for this
	// request: what was asked and what came back.
	Recalls []memory.Recalled
	// Measured is what the upstream's answers reported of the request's
	// cost (usage.go): nil when nothing was measured (the request was not
	// billed: refused, failed, cut; or counted tokens only); Reported
	// false when it was billed but its answers reported no usage.
	Measured *Measured
}

// record sends r's Event to the Recorder, if there is one and the request
// reached the Condenser.
func (p *Proxy) record(r *http.Request, ri *reqInfo, status int, start time.Time) {
	if p.opts.Recorder == nil || ri.report == nil {
		return
	}
	p.opts.Recorder.Record(Event{
		Time:      start,
		Scope:     ri.scope,
		Route:     ri.route,
		Mode:      ri.mode,
		UserAgent: r.Header.Get("User-Agent"),
		Status:    status,
		Duration:  time.Since(start),
		Report:    *ri.report,
		Recalls:   ri.recalls,
		Measured:  ri.measured,
	})
}
