package proxy

import (
	"net/http"
	"time"

	"github.com/condense-proxy/condense-proxy/condense"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Metrics are the proxy's Prometheus metrics, all prefixed condense_.
type Metrics struct {
	reg            *prometheus.Registry
	requests       *prometheus.CounterVec
	tokens         *prometheus.CounterVec
	overhead       prometheus.Histogram
	upstreamErrors *prometheus.CounterVec
	condensations  *prometheus.CounterVec
	tokensSaved    prometheus.Counter
	summarizer     *prometheus.HistogramVec
	// Per mode applied: tokens forwarded, and those of them that led the
	// conversation's previous request identically (a prompt cache's share).
	forwarded    *prometheus.CounterVec
	prefixReused *prometheus.CounterVec
	// The bill, estimated (condense.Report): input tokens read from and
	// written to the provider's prompt cache, per model family and mode
	// applied, for the requests forwarded and for the same requests had
	// they gone as received; the bills in units of the input price; and
	// observe mode's counterfactual.
	inputTokens, uncondensedTokens *prometheus.CounterVec
	bill                           *prometheus.CounterVec
	observeTokens, observeBill     *prometheus.CounterVec
	// The holdout arm (condense.holdout_share): requests counted and
	// their estimated bill, per arm.
	armRequests, armBill *prometheus.CounterVec
	// Measured usage (usage.go): the tokens the upstream's answers
	// reported, per model family and mode applied; their input bill in
	// units of the input price; per arm; and the billed requests whose
	// answers reported usage or not.
	inputMeasured, outputMeasured *prometheus.CounterVec
	billMeasured, armBillMeasured *prometheus.CounterVec
	measuredRequests              *prometheus.CounterVec
	// The recall tool: calls answered by outcome, items returned.
	recalls       *prometheus.CounterVec
	recalledItems prometheus.Counter
}

// observeReport records a counted request's tokens.
func (m *Metrics) observeReport(rep condense.Report) {
	applied := rep.Applied
	m.tokens.WithLabelValues("received").Add(float64(rep.TokensBefore))
	m.tokens.WithLabelValues("forwarded").Add(float64(rep.TokensAfter))
	m.forwarded.WithLabelValues(applied).Add(float64(rep.TokensAfter))
	if rep.Arm != "" {
		m.armRequests.WithLabelValues(rep.Arm).Inc()
	}
	if rep.PrefixReused > 0 {
		m.prefixReused.WithLabelValues(applied).Add(float64(rep.PrefixReused))
	}
}

// observeBilled records a billed request's estimated cache reads and writes
// and its bill (a request the upstream failed is not billed: unbill).
func (m *Metrics) observeBilled(rep condense.Report) {
	applied := rep.Applied
	family := rep.Family
	if family == "" {
		family = "unknown"
	}
	m.inputTokens.WithLabelValues(family, applied, "cache_read").Add(float64(rep.CacheRead))
	m.inputTokens.WithLabelValues(family, applied, "cache_write").Add(float64(rep.CacheWrite))
	m.uncondensedTokens.WithLabelValues(family, "cache_read").Add(float64(rep.UncondensedRead))
	m.uncondensedTokens.WithLabelValues(family, "cache_write").Add(float64(rep.UncondensedWrite))
	m.bill.WithLabelValues(family, applied, "forwarded").Add(rep.Bill)
	m.bill.WithLabelValues(family, applied, "uncondensed").Add(rep.BillUncondensed)
	if rep.Arm != "" {
		m.armBill.WithLabelValues(family, rep.Arm).Add(rep.Bill)
	}
	if applied == condense.AppliedObserve {
		m.observeTokens.WithLabelValues(family, "cache_read").Add(float64(rep.WouldCacheRead))
		m.observeTokens.WithLabelValues(family, "cache_write").Add(float64(rep.WouldCacheWrite))
		m.observeBill.WithLabelValues(family, "would").Add(rep.WouldBill)
		m.observeBill.WithLabelValues(family, "received").Add(rep.Bill)
	}
}

// observeMeasured records what a billed request's answers reported (nil:
// nothing measured).
func (m *Metrics) observeMeasured(rep condense.Report, ms *Measured) {
	if ms == nil {
		return
	}
	family := rep.Family
	if family == "" {
		family = "unknown"
	}
	if !ms.Reported {
		m.measuredRequests.WithLabelValues(family, "not_reported").Inc()
		return
	}
	m.measuredRequests.WithLabelValues(family, "reported").Inc()
	u := ms.Usage
	for _, k := range []struct {
		kind string
		n    int
	}{{"cache_read", u.CacheRead}, {"cache_write", u.CacheWrite - u.CacheWrite1h}, {"cache_write_1h", u.CacheWrite1h}, {"uncached", u.Uncached}} {
		m.inputMeasured.WithLabelValues(family, rep.Applied, k.kind).Add(float64(k.n))
	}
	m.outputMeasured.WithLabelValues(family, rep.Applied).Add(float64(u.Output))
	m.billMeasured.WithLabelValues(family, rep.Applied).Add(ms.Bill)
	if rep.Arm != "" {
		m.armBillMeasured.WithLabelValues(family, rep.Arm).Add(ms.Bill)
	}
}

// Condensed implements condense.Observer.
func (m *Metrics) Condensed(mode, outcome string, saved int) {
	m.condensations.WithLabelValues(mode, outcome).Inc()
	if saved > 0 {
		m.tokensSaved.Add(float64(saved))
	}
}

// SummarizerCall implements condense.Observer.
func (m *Metrics) SummarizerCall(d time.Duration, err error) {
	outcome := "ok"
	if err != nil {
		outcome = "error"
	}
	m.summarizer.WithLabelValues(outcome).Observe(d.Seconds())
}

// CacheStats is what the metrics read from the cache.
type CacheStats struct {
	Hits, Misses, Errors uint64
}

// NewMetrics registers the metrics on a new registry. cacheStats, if not
// nil, is read at every scrape for the cache counters.
func NewMetrics(cacheStats func() CacheStats) *Metrics {
	reg := prometheus.NewRegistry()
	m := &Metrics{
		reg: reg,
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "condense_requests_total", Help: "Requests by route and status.",
		}, []string{"route", "status"}),
		tokens: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "condense_tokens_total", Help: "Tokens of chat requests as received and as forwarded.",
		}, []string{"stage"}),
		overhead: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "condense_proxy_overhead_seconds",
			Help:    "Time from receiving a chat request to handing it to the upstream (reading, counting, condensing).",
			Buckets: []float64{.0001, .0005, .001, .002, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60},
		}),
		upstreamErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "condense_upstream_errors_total", Help: "Upstream failures by the status returned to the client.",
		}, []string{"kind"}),
	}
	m.condensations = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "condense_condensations_total", Help: "Condensing attempts by mode applied and outcome.",
	}, []string{"mode", "outcome"})
	m.forwarded = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "condense_forwarded_tokens_total", Help: "Tokens forwarded, by mode applied (none, full, selective, truncate).",
	}, []string{"mode"})
	m.prefixReused = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "condense_prefix_reused_tokens_total",
		Help: "Forwarded tokens that led the conversation's previous forwarded request identically (what a provider's prompt cache can serve), by mode applied.",
	}, []string{"mode"})
	m.inputTokens = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "condense_input_tokens_estimated_total",
		Help: "Input tokens of the requests forwarded, estimated: read from the provider's prompt cache (their prefix shared with the conversation's previous request within the cache's lifetime) or written, by model family and mode applied.",
	}, []string{"family", "applied", "kind"})
	m.uncondensedTokens = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "condense_uncondensed_input_tokens_estimated_total",
		Help: "The same requests had they been forwarded as received: cache reads and writes, by model family.",
	}, []string{"family", "kind"})
	m.bill = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "condense_bill_estimated_total",
		Help: "Estimated input bill in units of the model's input price (cache reads at cache_read, writes at cache_write): of the requests forwarded, and of the same requests forwarded as received.",
	}, []string{"family", "applied", "bill"})
	m.observeTokens = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "condense_observe_input_tokens_estimated_total",
		Help: "Observe mode: input tokens auto would have forwarded, read from the prompt cache or written, by model family.",
	}, []string{"family", "kind"})
	m.observeBill = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "condense_observe_bill_estimated_total",
		Help: "Observe mode: estimated bill of what auto would have forwarded (would) and of what was forwarded (received), in units of the input price.",
	}, []string{"family", "bill"})
	m.armRequests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "condense_arm_requests_total",
		Help: "Requests counted per arm when condense.holdout_share is set: holdout (forwarded as received) or condensed.",
	}, []string{"arm"})
	m.armBill = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "condense_arm_bill_estimated_total",
		Help: "Estimated input bill of the requests forwarded, in units of the input price, per model family and arm (condense.holdout_share); the holdout arm's is of the requests as received.",
	}, []string{"family", "arm"})
	m.inputMeasured = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "condense_input_tokens_measured_total",
		Help: "Input tokens the upstream's answers reported (measured usage), by model family, mode applied and kind: cache_read, cache_write (5-minute or unstated lifetime), cache_write_1h, uncached; the kinds add up to the prompts. Billed requests only; recall rounds included.",
	}, []string{"family", "applied", "kind"})
	m.outputMeasured = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "condense_output_tokens_measured_total",
		Help: "Output tokens the upstream's answers reported (reasoning included), by model family and mode applied.",
	}, []string{"family", "applied"})
	m.billMeasured = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "condense_bill_measured_total",
		Help: "Input bill of the usage the upstream's answers reported, in units of the model's input price (cache reads and writes at the model's prices), by model family and mode applied: compare condense_bill_estimated_total{bill=\"forwarded\"}.",
	}, []string{"family", "applied"})
	m.armBillMeasured = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "condense_arm_bill_measured_total",
		Help: "Measured input bill (condense_bill_measured_total) per model family and arm (condense.holdout_share).",
	}, []string{"family", "arm"})
	m.measuredRequests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "condense_measured_requests_total",
		Help: "Billed requests of the condensing routes by whether their answers reported usage (reported, not_reported), per model family.",
	}, []string{"family", "usage"})
	m.tokensSaved = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "condense_tokens_saved_total",
		Help: "Tokens removed from forwarded requests by condensing, summed per request: a conversation's removed tokens count again on each later request, so this is not a saving (the saving is condense_bill_estimated_total's uncondensed less forwarded).",
	})
	m.summarizer = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "condense_summarizer_call_seconds", Help: "Summarizer calls by outcome, with latency.",
		Buckets: []float64{.1, .25, .5, 1, 2.5, 5, 10, 20, 40, 60, 120},
	}, []string{"outcome"})
	m.recalls = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "condense_recalls_total",
		Help: "condense_recall calls the proxy answered, by outcome (found, none, unknown, invalid; limit: past max_recall_rounds; no_room: the recalled text would not fit the window).",
	}, []string{"outcome"})
	m.recalledItems = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "condense_recalled_items_total", Help: "Memory items (steps, summaries) returned by condense_recall.",
	})
	reg.MustRegister(m.recalls, m.recalledItems)
	reg.MustRegister(m.inputMeasured, m.outputMeasured, m.billMeasured, m.armBillMeasured, m.measuredRequests)
	reg.MustRegister(m.condensations, m.tokensSaved, m.summarizer, m.forwarded, m.prefixReused,
		m.inputTokens, m.uncondensedTokens, m.bill, m.observeTokens, m.observeBill, m.armRequests, m.armBill)
	reg.MustRegister(m.requests, m.tokens, m.overhead, m.upstreamErrors,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	if cacheStats != nil {
		for _, c := range []struct {
			name, help string
			get        func(CacheStats) uint64
		}{
			{"condense_cache_hits_total", "Cache hits.", func(s CacheStats) uint64 { return s.Hits }},
			{"condense_cache_misses_total", "Cache misses.", func(s CacheStats) uint64 { return s.Misses }},
			{"condense_cache_errors_total", "Cache backend errors (served as misses).", func(s CacheStats) uint64 { return s.Errors }},
		} {
			get := c.get
			reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: c.name, Help: c.help},
				func() float64 { return float64(get(cacheStats())) }))
		}
	}
	return m
}

// Registry returns the registry, for other packages' collectors.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// Handler serves the metrics in the Prometheus text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}
