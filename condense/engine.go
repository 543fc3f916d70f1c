// Package condense decides whether a chat-completions request must be
// condensed and condenses it.
//
// The proxy hands the Engine the raw request body. The Engine reads the
// model name, counts the request's tokens (package tokenizer) against that
// model's threshold, and, when the request is over it (or the caller forces
// it), applies the requested strategy. It returns the body to forward —
// the very same bytes when nothing was done — and a Report of what
// happened. The Engine never turns a request it does not understand into a
// different one: a body that is not valid JSON or has no messages array is
// returned untouched.
package condense

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/tidwall/gjson"

	"github.com/condense-proxy/condense-proxy/tokenizer"
)

// Modes a request can ask for.
const (
	ModeAuto      = "auto"
	ModeFull      = "full"
	ModeSelective = "selective"
	ModeTruncate  = "truncate"
	ModeOff       = "off"
)

// Applied values of a Report.
const (
	AppliedNone = "none"
)

// ModelLimits is what the Engine needs to know of a model.
type ModelLimits struct {
	Window       int     // context window in input tokens
	Threshold    float64 // fraction of Window that triggers condensing
	Encoding     string  // tokenizer encoding
	SafetyFactor float64 // >= 1; multiplies counts of non-OpenAI models
	Known        bool    // false: Window is the configured default
}

// Models resolves a model name to its limits.
type Models interface {
	Limits(model string) ModelLimits
}

// ModelsFunc adapts a function to Models.
type ModelsFunc func(model string) ModelLimits

// Limits calls f.
func (f ModelsFunc) Limits(model string) ModelLimits { return f(model) }

// Options configures an Engine.
type Options struct {
	// Target is the fraction of the window condensing aims for. Default 0.5.
	Target float64
	// MaxMessages triggers condensing above this many messages; 0: off.
	MaxMessages int
}

// Request is one request to condense.
type Request struct {
	Body  []byte
	Mode  string // one of the Mode constants; "" means ModeAuto
	Force bool   // condense even under the threshold
	// Scope identifies the caller (a hash of its credentials, never the
	// credentials); cache keys that depend on the conversation include it.
	Scope string
}

// Report says what the Engine did with a request.
type Report struct {
	Model        string
	Counted      bool   // false: the body is not a chat request; nothing else is set
	Applied      string // none, full, selective or truncate
	TokensBefore int    // tokens of the request as received (safety factor applied)
	TokensAfter  int    // tokens of the request forwarded
	Messages     int
	Window       int
	Trigger      int    // tokens above which the request is condensed
	Reason       string // why it was or was not condensed
	Degraded     string // set when a fallback was used
	Summaries    string // summary levels and counts, when summaries were used
	Cache        string // hit, miss or partial, when summaries were used
	Duration     time.Duration
}

// Result is the body to forward and the report.
type Result struct {
	Body   []byte
	Report Report
}

// Engine is safe for concurrent use.
type Engine struct {
	counter *tokenizer.Counter
	models  Models
	opts    Options
	log     *slog.Logger
}

// New returns an Engine. log may be nil (slog.Default()).
func New(counter *tokenizer.Counter, models Models, opts Options, log *slog.Logger) *Engine {
	if opts.Target <= 0 {
		opts.Target = 0.5
	}
	if log == nil {
		log = slog.Default()
	}
	return &Engine{counter: counter, models: models, opts: opts, log: log}
}

// Condense decides and, when needed, condenses req. It returns an error
// only when ctx ends; any other failure yields the original body and a
// report that says why.
func (e *Engine) Condense(ctx context.Context, req Request) (Result, error) {
	start := time.Now()
	res := Result{Body: req.Body, Report: Report{Applied: AppliedNone}}
	defer func() { res.Report.Duration = time.Since(start) }()

	model := gjson.GetBytes(req.Body, "model").String()
	lim := e.models.Limits(model)
	rc, err := e.counter.Request(lim.Encoding, req.Body)
	if errors.Is(err, tokenizer.ErrNotChat) {
		res.Report.Reason = "not a chat request; forwarded unchanged"
		res.Report.Duration = time.Since(start)
		return res, nil
	}
	if err != nil {
		return res, fmt.Errorf("counting tokens: %w", err)
	}
	r := &res.Report
	r.Model = model
	r.Counted = true
	r.Messages = len(rc.Messages)
	r.Window = lim.Window
	r.TokensBefore = scale(rc.Total, lim.SafetyFactor)
	r.TokensAfter = r.TokensBefore
	r.Trigger = int(float64(lim.Window) * lim.Threshold)

	over := r.TokensBefore > r.Trigger
	tooMany := e.opts.MaxMessages > 0 && r.Messages > e.opts.MaxMessages
	switch {
	case req.Mode == ModeOff:
		r.Reason = "mode off"
	case !over && !tooMany && !req.Force:
		r.Reason = "under threshold"
	default:
		// Condensing strategies arrive with the full and selective
		// condensing work; until then an over-threshold request is
		// forwarded as received.
		r.Reason = "over threshold; no condensing strategy available"
	}
	if err := ctx.Err(); err != nil {
		return res, err
	}
	return res, nil
}

func scale(n int, factor float64) int {
	if factor <= 1 {
		return n
	}
	return int(float64(n)*factor + 0.5)
}
