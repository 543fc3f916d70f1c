// Package litellm reads a LiteLLM upstream's model table, so the model
// registry's windows and prices come from the gateway the user already
// configured instead of being guessed from an alias's name.
//
// Fetch asks {upstream}/model/info once and returns what it says of each
// alias: its window, output limit and per-token prices. A Poller asks at
// start and then on every tick, hands each table read to its Apply
// function (the registry's SetGateway), and stops asking for good when
// the upstream is not LiteLLM (404, not JSON) or refuses the key
// (401/403), each said once in the log. A failure that may pass (a 5xx,
// the network) keeps the table read before and is tried again at the
// next tick.
package litellm

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/tidwall/gjson"
)

// Model is what /model/info says of one deployment of an alias. Zero
// numbers are unknown.
type Model struct {
	// Alias is the model_name agents send.
	Alias string
	// Model is the model the alias routes to: model_info.base_model,
	// else model_info.key, else litellm_params.model ("openai/gpt-4o").
	Model string
	// MaxInputTokens and MaxOutputTokens are the model's limits.
	MaxInputTokens, MaxOutputTokens int
	// InputCostPerToken is the input price in USD per token;
	// CacheReadCost and CacheWriteCost the prompt cache's read and
	// write prices per token; OutputCostPerToken the output price per
	// token.
	InputCostPerToken, CacheReadCost, CacheWriteCost, OutputCostPerToken float64
}

// InputPricePerMTok is the input price in USD per million tokens; 0:
// unknown.
func (m Model) InputPricePerMTok() float64 { return m.InputCostPerToken * 1e6 }

// CacheRead is the cache read price as a multiple of the input price; 0:
// unknown.
func (m Model) CacheRead() float64 { return ratio(m.CacheReadCost, m.InputCostPerToken) }

// CacheWrite is the cache write price as a multiple of the input price;
// 0: unknown.
func (m Model) CacheWrite() float64 { return ratio(m.CacheWriteCost, m.InputCostPerToken) }

// OutputPrice is the output price as a multiple of the input price; 0:
// unknown.
func (m Model) OutputPrice() float64 { return ratio(m.OutputCostPerToken, m.InputCostPerToken) }

func ratio(a, b float64) float64 {
	if !(a > 0 && b > 0) {
		return 0
	}
	return a / b
}

// Bounds of one answer: its size and the entries read from it.
const (
	MaxResponseBytes = 8 << 20
	MaxModels        = 10_000
)

// Errors of Fetch that stop the asking.
var (
	// ErrNotLiteLLM: the upstream does not serve /model/info (404, 405,
	// another 4xx, an answer that is not JSON or has no data list).
	ErrNotLiteLLM = errors.New("the upstream does not serve LiteLLM's /model/info")
	// ErrUnauthorized: the upstream answered 401 or 403.
	ErrUnauthorized = errors.New("the upstream refused /model/info")
)

// Endpoint is the model table's URL under upstream: its path with
// /model/info appended (LiteLLM serves it under /v1 too).
func Endpoint(upstream *url.URL) *url.URL {
	u := *upstream
	u.Path = strings.TrimSuffix(u.Path, "/") + "/model/info"
	u.RawPath, u.RawQuery, u.Fragment = "", "", ""
	return &u
}

// Fetch asks upstream's /model/info, with key as a bearer token when
// set, and returns its entries (at most MaxModels). Errors are
// ErrNotLiteLLM, ErrUnauthorized (both wrapped with the status), or
// another that may pass.
func Fetch(ctx context.Context, hc *http.Client, upstream *url.URL, key string) ([]Model, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, Endpoint(upstream).String(), nil)
	if err != nil {
		return nil, fmt.Errorf("model info request: %w", err)
	}
	req.Header.Set("Accept", "application/json")
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("asking /model/info: %w", err)
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusUnauthorized, resp.StatusCode == http.StatusForbidden:
		return nil, fmt.Errorf("%w: status %d", ErrUnauthorized, resp.StatusCode)
	case resp.StatusCode == http.StatusTooManyRequests, resp.StatusCode == http.StatusRequestTimeout, resp.StatusCode >= 500:
		return nil, fmt.Errorf("/model/info answered status %d", resp.StatusCode)
	case resp.StatusCode != http.StatusOK:
		return nil, fmt.Errorf("%w: status %d", ErrNotLiteLLM, resp.StatusCode)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, MaxResponseBytes+1))
	if err != nil {
		return nil, fmt.Errorf("reading /model/info: %w", err)
	}
	if len(body) > MaxResponseBytes {
		return nil, fmt.Errorf("/model/info answered more than %d bytes", MaxResponseBytes)
	}
	return parse(body)
}

// parse reads a /model/info answer.
func parse(body []byte) ([]Model, error) {
	if !gjson.ValidBytes(body) {
		return nil, fmt.Errorf("%w: the answer is not JSON", ErrNotLiteLLM)
	}
	data := gjson.GetBytes(body, "data")
	if !data.IsArray() {
		return nil, fmt.Errorf("%w: the answer has no data list", ErrNotLiteLLM)
	}
	var out []Model
	data.ForEach(func(_, e gjson.Result) bool {
		if len(out) >= MaxModels {
			return false
		}
		alias := e.Get("model_name")
		if alias.Type != gjson.String || alias.Str == "" {
			return true
		}
		info := e.Get("model_info")
		out = append(out, Model{
			Alias:              alias.Str,
			Model:              firstString(info.Get("base_model"), info.Get("key"), e.Get("litellm_params.model")),
			MaxInputTokens:     tokens(info.Get("max_input_tokens")),
			MaxOutputTokens:    tokens(info.Get("max_output_tokens")),
			InputCostPerToken:  cost(info.Get("input_cost_per_token")),
			CacheReadCost:      cost(info.Get("cache_read_input_token_cost")),
			CacheWriteCost:     cost(info.Get("cache_creation_input_token_cost")),
			OutputCostPerToken: cost(info.Get("output_cost_per_token")),
		})
		return true
	})
	return out, nil
}

func firstString(rs ...gjson.Result) string {
	for _, r := range rs {
		if r.Type == gjson.String && r.Str != "" {
			return r.Str
		}
	}
	return ""
}

// tokens reads a token count: a positive number below 2^31, else 0.
func tokens(r gjson.Result) int {
	if r.Type != gjson.Number || !(r.Num >= 1 && r.Num < math.MaxInt32) {
		return 0
	}
	return int(r.Num)
}

// cost reads a price per token: a finite positive number, else 0.
func cost(r gjson.Result) float64 {
	if r.Type != gjson.Number || !(r.Num > 0 && r.Num < 1) {
		return 0
	}
	return r.Num
}

// Options configure a Poller.
type Options struct {
	// Upstream is the upstream's base URL.
	Upstream *url.URL
	// HTTP sends the requests. Nil: http.DefaultClient.
	HTTP *http.Client
	// Key is sent as a bearer token; empty: none.
	Key string
	// Interval is the time between two reads; 0: only at start.
	Interval time.Duration
	// Ticks replaces the ticker of Interval (a test's channel).
	Ticks <-chan time.Time
	// Timeout bounds one read. 0: 10 seconds.
	Timeout time.Duration
	// Apply receives each table read and returns how many aliases it
	// kept. Required.
	Apply func([]Model) int
	// Logger receives the Poller's lines. Nil: discarded.
	Logger *slog.Logger
	// OnRefresh, when set, is called after each read with its error (a
	// test's hook).
	OnRefresh func(error)
}

// Poller keeps the registry's table of a LiteLLM upstream fresh. Its
// methods are safe for concurrent use.
type Poller struct {
	o      Options
	cancel context.CancelFunc
	done   chan struct{}

	mu      sync.Mutex
	stopped error // why the asking stopped; nil: it goes on
	kept    int   // aliases of the last table applied; -1: none yet
}

// Start reads the table once (bounded by Options.Timeout) and then on
// every tick until ctx ends, Close is called or the asking stops (after
// a first read that stops it, no ticks are taken at all).
func Start(ctx context.Context, o Options) *Poller {
	if o.HTTP == nil {
		o.HTTP = http.DefaultClient
	}
	if o.Timeout <= 0 {
		o.Timeout = 10 * time.Second
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	ctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	p := &Poller{o: o, cancel: cancel, done: make(chan struct{}), kept: -1}
	p.Refresh(ctx)
	ticks := o.Ticks
	if p.Stopped() != nil || ticks == nil && o.Interval <= 0 {
		close(p.done)
		return p
	}
	var ticker *time.Ticker
	if ticks == nil {
		ticker = time.NewTicker(o.Interval)
		ticks = ticker.C
	}
	go func() {
		defer close(p.done)
		if ticker != nil {
			defer ticker.Stop()
		}
		for {
			select {
			case <-ctx.Done():
				return
			case <-ticks:
				if errors.Is(p.Refresh(ctx), errStopped) {
					return
				}
			}
		}
	}()
	return p
}

// errStopped is what Refresh returns once the asking has stopped.
var errStopped = errors.New("no longer asking /model/info")

// Refresh reads the table now and applies it; after ErrNotLiteLLM or
// ErrUnauthorized it asks nothing and returns an error wrapping the
// reason.
func (p *Poller) Refresh(ctx context.Context) error {
	p.mu.Lock()
	stopped := p.stopped
	p.mu.Unlock()
	if stopped != nil {
		return fmt.Errorf("%w: %w", errStopped, stopped)
	}
	ctx, cancel := context.WithTimeout(ctx, p.o.Timeout)
	models, err := Fetch(ctx, p.o.HTTP, p.o.Upstream, p.o.Key)
	cancel()
	p.settle(models, err)
	if p.o.OnRefresh != nil {
		p.o.OnRefresh(err)
	}
	return err
}

// settle applies a table read, or logs why none was.
func (p *Poller) settle(models []Model, err error) {
	log := p.o.Logger.With("url", Endpoint(p.o.Upstream).Redacted())
	switch {
	case err == nil:
		n := p.o.Apply(models)
		p.mu.Lock()
		changed := n != p.kept
		p.kept = n
		p.mu.Unlock()
		if changed {
			log.Info("litellm: model windows and prices read from the upstream's /model/info", "aliases", n)
		} else {
			log.Debug("litellm: /model/info read again", "aliases", n)
		}
	case errors.Is(err, ErrNotLiteLLM):
		p.stop(err)
		log.Info("the upstream does not answer LiteLLM's /model/info: model windows and prices come from the registry; not asked again until restart", "reason", err.Error())
	case errors.Is(err, ErrUnauthorized):
		p.stop(err)
		hint := "set litellm.key (CONDENSE_LITELLM_KEY) to a key allowed to read model info"
		if p.o.Key != "" {
			hint = "litellm.key is not allowed to read model info"
		}
		log.Warn("LiteLLM's /model/info refused: model windows and prices come from the registry; not asked again until restart; "+hint, "reason", err.Error())
	case errors.Is(err, context.Canceled):
	default:
		log.Warn("litellm: reading /model/info failed; the table read before is kept and asked again at the next refresh", "err", err)
	}
}

func (p *Poller) stop(err error) {
	p.mu.Lock()
	p.stopped = err
	p.mu.Unlock()
}

// Stopped reports why the asking stopped; nil while it goes on.
func (p *Poller) Stopped() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stopped
}

// Close stops the ticks and waits for a read in flight.
func (p *Poller) Close() {
	p.cancel()
	<-p.done
}
