package app

import (
	"context"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/condense-proxy/condense-proxy/condense"
	"github.com/condense-proxy/condense-proxy/config"
	"github.com/condense-proxy/condense-proxy/keepalive"
	"github.com/condense-proxy/condense-proxy/proxy"
	"github.com/condense-proxy/condense-proxy/ui"
)

// buildKeepAlive makes the keep-alive Keeper when cfg.KeepAlive.Enabled:
// the registry's cache prices and lifetimes, keepalive.models' globs,
// Redis (when configured) for the owner tokens and the lock, the proxy's
// transport, the engine told of every ping that read a cache (its cold
// turns); and its metrics. Off, a.KeepAlive stays nil.
func (a *App) buildKeepAlive(o Options, transport http.RoundTripper) error {
	kc := a.Config.KeepAlive
	if !kc.Enabled {
		return nil
	}
	reg := a.Registry
	// The engine condenses a cold turn over the threshold to the target:
	// letting a gap go cold may cost less than pinging it through.
	cd := a.Config.Condense
	coldTurns := a.Engine != nil && cd.ColdTurns && cd.Mode != condense.ModeOff && cd.Mode != condense.ModeObserve
	ko := keepalive.Options{
		Upstream:  a.Upstream,
		Transport: transport,
		Model: func(model string) keepalive.Model {
			mi := reg.Lookup(model)
			m := keepalive.Model{CacheTTL: mi.CacheTTL, CacheRead: mi.CacheRead, CacheWrite: mi.CacheWrite, OutputPrice: mi.OutputPrice, Reasoning: mi.Reasoning}
			if coldTurns {
				lim := a.models.Limits(model)
				m.ColdAbove, m.ColdTo = int(float64(lim.Window)*lim.Threshold), int(float64(lim.Window)*lim.Target)
			}
			return m
		},
		MaxPings:        kc.MaxPings,
		MinPrefixTokens: kc.MinPrefixTokens,
		Clock:           o.KeepAliveClock,
		Logger:          a.Log,
	}
	if a.Engine != nil {
		// A conversation its pings keep warm is not cold for the engine.
		ko.Warmed = a.Engine.Warmed
	}
	if globs := kc.Models; len(globs) > 0 {
		ko.Match = func(model string) bool {
			for _, g := range globs {
				if config.MatchModel(g, model) {
					return true
				}
			}
			return false
		}
	}
	if a.redis != nil {
		// Redis itself, not its memory layer: a replica must see the
		// token another one wrote a moment ago.
		ko.Store, ko.Locker = a.redis, a.redis
	}
	k, err := keepalive.New(ko)
	if err != nil {
		return err
	}
	a.KeepAlive = k
	registerKeepAliveMetrics(a.Metrics.Registry(), k)
	a.Log.Info("keepalive on: idle conversations are pinged with their callers' own credentials", "max_pings", kc.MaxPings,
		"min_prefix_tokens", kc.MinPrefixTokens, "models", kc.Models)
	return nil
}

// keepAliveHook adapts a Keeper to proxy.KeepAlive.
type keepAliveHook struct{ k *keepalive.Keeper }

func (h keepAliveHook) Forwarded(ctx context.Context, r proxy.KeepAliveRequest) proxy.AnswerObserver {
	w := h.k.Forwarded(ctx, keepalive.Request{
		Scope: r.Scope, Conversation: r.Conversation, Codec: r.Codec, Model: r.Model,
		Path: r.Path, RawQuery: r.RawQuery, Header: r.Header, Body: r.Body, Tokens: r.Tokens, Received: r.Received,
	})
	if w == nil {
		return nil
	}
	return w
}

// keepAliveStats is what the live page shows of the Keeper.
func keepAliveStats(k *keepalive.Keeper) func() ui.KeepAliveStats {
	return func() ui.KeepAliveStats {
		s := k.Stats()
		return ui.KeepAliveStats{Pings: s.Pings, PingWrites: s.PingWrites, PingErrors: s.PingErrors, CacheRead: s.CacheRead,
			PingCost: s.PingCost, Avoided: s.Avoided, NetSaving: s.NetSaving(), Armed: s.Armed}
	}
}

// registerKeepAliveMetrics adds the Keeper's counts to /metrics.
func registerKeepAliveMetrics(reg *prometheus.Registry, k *keepalive.Keeper) {
	counters := []struct {
		name, help string
		get        func(keepalive.Stats) float64
	}{
		{"condense_keepalive_pings_total", "Keep-alive pings sent and answered.", func(s keepalive.Stats) float64 { return float64(s.Pings) }},
		{"condense_keepalive_ping_cache_writes_total", "Pings whose usage showed a cache write (the cache was gone; the conversation is not pinged again).",
			func(s keepalive.Stats) float64 { return float64(s.PingWrites) }},
		{"condense_keepalive_ping_errors_total", "Pings that failed.", func(s keepalive.Stats) float64 { return float64(s.PingErrors) }},
		{"condense_keepalive_yielded_total", "Pings left to another replica (it served a later request, or was pinging).",
			func(s keepalive.Stats) float64 { return float64(s.Yielded) }},
		{"condense_keepalive_ping_cache_read_tokens_total", "Prompt-cache read tokens the pings bought.",
			func(s keepalive.Stats) float64 { return float64(s.CacheRead) }},
		{"condense_keepalive_ping_cost_tokens_total", "What the pings cost, in input-token equivalents (cache reads and writes at their prices, output at 5x).",
			func(s keepalive.Stats) float64 { return s.PingCost }},
		{"condense_keepalive_avoided_rewrite_tokens_total", "Cache re-writes the pings avoided, in input-token equivalents (tokens read after a gap longer than the cache TTL x (write - read price)).",
			func(s keepalive.Stats) float64 { return s.Avoided }},
	}
	for _, c := range counters {
		get := c.get
		reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: c.name, Help: c.help},
			func() float64 { return get(k.Stats()) }))
	}
	reg.MustRegister(
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "condense_keepalive_net_saving_tokens",
			Help: "Estimated net saving of the pings, in input-token equivalents: re-writes avoided less the pings' cost (negative: they cost more)."},
			func() float64 { return k.Stats().NetSaving() }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "condense_keepalive_armed_conversations",
			Help: "Conversations with a ping scheduled."},
			func() float64 { return float64(k.Stats().Armed) }),
	)
}
