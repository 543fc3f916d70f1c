package ui

import (
	"container/list"
	"crypto/sha256"
	"encoding/hex"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/condense-proxy/condense-proxy/condense"
	"github.com/condense-proxy/condense-proxy/memory"
	"github.com/condense-proxy/condense-proxy/proxy"
)

// Bounds of what the store keeps besides the configured ones: the names it
// counts by come from requests, so their number is capped too.
const (
	maxModels          = 64
	maxDegradedReasons = 32
	maxTextBytes       = 256 << 10 // one summary, digest or marker text
	maxUserAgent       = 256
	otherKey           = "(other)"
	minutes            = 60 // the overview's per-minute history
)

// Outcomes of a request.
const (
	outcomeCondensed  = "condensed"   // the forwarded request is smaller
	outcomeUnchanged  = "unchanged"   // over the trigger, forwarded as received
	outcomePassed     = "passed"      // under the trigger
	outcomeNotCounted = "not_counted" // not a request the engine understands
)

// store is the bounded in-memory record behind the page: overview counters
// since start, and per conversation (caller scope and conversation id) its
// recent requests. When the conversations are at their bound, the least
// recently active of the caller keeping the most goes, so one caller
// cannot push another's conversations off the page. Texts and shapes of a request (its detail) are kept
// for condensed or degraded requests within a byte budget, oldest dropped
// first, and for the latest request of each conversation.
//
// Safe for concurrent use; every method takes mu.
type store struct {
	maxConvs, maxReqs, maxDetailBytes int

	mu      sync.Mutex
	started time.Time
	version uint64
	changed chan struct{} // closed and replaced on every change

	convs   map[convKey]*conversation
	byID    map[string]*conversation
	lru     list.List      // of *conversation, most recently active first
	byScope map[string]int // conversations kept per caller scope

	details     list.List // of *detail, oldest first
	detailBytes int

	tot      totals
	modes    map[string]*modeCounts
	models   map[string]*modelCounts
	degraded map[string]int
	minute   [minutes]minuteCounts

	keepAlive func() KeepAliveStats // nil: keep-alive is off
}

type convKey struct{ scope, conv string }

// conversation is one caller's conversation as this replica saw it.
type conversation struct {
	id        string // opaque: a hash of the key
	key       convKey
	caller    string // a short tag of the scope, for admins
	model     string
	userAgent string
	format    string
	first     time.Time
	last      time.Time
	total     int // requests seen, including those no longer kept
	condensed int
	degraded  int
	bill      billSums // every request seen, including those no longer kept
	measured  measuredSums
	observed  observeSums // its requests in observe mode
	arm       string      // its arm (condense.holdout_share), once a request said it
	rows      []row       // ring: request n is at (n-1) % cap
	transient *detail
	prevIDs   map[string]string // the previous request's changes (key → its kept copy), to tell new ones
	elem      *list.Element
}

// row is one request, compact: what the list, the chart and the table need.
type row struct {
	n         int
	time      time.Time
	status    int
	duration  time.Duration
	mode      string
	applied   string
	outcome   string
	before    int
	after     int
	window    int
	trigger   int
	calls     int
	prefix    int // PrefixReused; -1 unknown
	messages  int
	summaries int // changes by kind
	digests   int
	windows   int
	fresh     [3]int // changes by kind not in the previous request
	degraded  bool
	// The estimated bill (condense.Report): cache reads and writes of
	// the request forwarded, its bill and the bill uncondensed.
	cacheRead, cacheWrite int
	bill, billUncondensed float64
	// price is the model's input price, USD per million tokens (0:
	// unknown).
	price float64
	// Observe mode (applied "observe"): what auto would have forwarded.
	wouldApply            string
	wouldAfter            int
	wouldBill             float64
	wouldRead, wouldWrite int
	// compaction names the agent when the request was its own compaction
	// request (a name from the engine's table, never request text).
	compaction string
	recalls    int // condense_recall calls the proxy answered
	// measured is what the upstream's answers reported (nil: nothing
	// measured: not billed).
	measured *proxy.Measured
	detail   *detail
}

// detail is what the detail view needs beyond the row; its strings are
// copies, never views into a request body.
type detail struct {
	conv      *conversation
	n         int
	size      int
	elem      *list.Element
	reason    string
	summaries string
	cache     string
	degraded  string
	changes   []condense.Change
	received  []condense.ItemShape
	forwarded []condense.ItemShape
	recalls   []memory.Recalled // texts clipped

	// path and degradedKinds: the report's Path and DegradedKinds (its
	// vocabularies' words, no content).
	path, degradedKinds []string
}

// totals are the overview counters since start.
type totals struct {
	Requests        int64 `json:"requests"`
	Errors          int64 `json:"errors"` // status >= 400 or the client left
	TokensReceived  int64 `json:"tokens_received"`
	TokensForwarded int64 `json:"tokens_forwarded"`
	PrefixReused    int64 `json:"prefix_reused"`
	PrefixForwarded int64 `json:"prefix_forwarded"` // forwarded tokens of requests whose prefix reuse is known
	PrefixRequests  int64 `json:"prefix_requests"`
	SummarizerCalls int64 `json:"summarizer_calls"`
	Degraded        int64 `json:"degraded"`
	Summaries       int64 `json:"summaries"` // changes by kind
	// SummariesCached are the new summaries read from the summary cache
	// (made ahead, by another replica, or before a restart of the page),
	// not made by the request's summarizer calls.
	SummariesCached int64 `json:"summaries_cached"`
	Digests         int64 `json:"digests"`
	Windows         int64 `json:"windows"`
	Recalls         int64 `json:"recalls"` // condense_recall calls the proxy answered
	billSums
	Observe observeSums `json:"observe"`
	// Measured is what the upstream's answers reported (measured usage);
	// the overview shows it as measuredJSON.
	Measured measuredSums `json:"-"`
	// Arms are the holdout arm's figures (condense.holdout_share), by
	// arm: armCondensed, armHoldout.
	Arms [2]armSums `json:"-"`
}

// billSums add up the engine's bill estimates (condense.Report): tokens
// of the requests forwarded read from the provider's prompt cache and
// written, the same for the requests had they gone as received, and the
// bills of both in units of the model's input price — and in dollars,
// each request's bill times its model's input price, for the requests
// whose model has one (Priced; the Unpriced requests' bills are in no
// dollar figure).
type billSums struct {
	CacheRead        int64  `json:"cache_read"`
	CacheWrite       int64  `json:"cache_write"`
	UncondensedRead  int64  `json:"uncondensed_read"`
	UncondensedWrite int64  `json:"uncondensed_write"`
	Bill             inputs `json:"bill"`
	BillUncondensed  inputs `json:"bill_uncondensed"`
	// Dollars of the priced requests.
	BillUSD            usd   `json:"bill_usd"`
	BillUncondensedUSD usd   `json:"bill_uncondensed_usd"`
	Priced             int64 `json:"priced"`   // counted requests whose model has an input price
	Unpriced           int64 `json:"unpriced"` // and whose model has none
}

func (b *billSums) add(rep *condense.Report) {
	b.CacheRead += int64(rep.CacheRead)
	b.CacheWrite += int64(rep.CacheWrite)
	b.UncondensedRead += int64(rep.UncondensedRead)
	b.UncondensedWrite += int64(rep.UncondensedWrite)
	bill, unc := inputsOf(rep.Bill), inputsOf(rep.BillUncondensed)
	b.Bill += bill
	b.BillUncondensed += unc
	switch {
	case !rep.Counted:
	case knownPrice(rep.InputPrice):
		b.Priced++
		b.BillUSD += dollars(bill, rep.InputPrice)
		b.BillUncondensedUSD += dollars(unc, rep.InputPrice)
	default:
		b.Unpriced++
	}
}

// usdOf is the dollar figure of b's bill (unc: of its bill uncondensed):
// nil when none of its requests has a price ("unknown price").
func (b *billSums) usdOf(unc bool) *usd {
	if b.Priced == 0 {
		return nil
	}
	v := b.BillUSD
	if unc {
		v = b.BillUncondensedUSD
	}
	return &v
}

// usd is an amount in US dollars, kept in nanodollars so that sums are
// exact whatever the order requests are recorded in. In JSON it is a
// plain number of dollars.
type usd int64

// maxPrice bounds an input price taken (USD per million tokens), as the
// registry does.
const maxPrice = 1000

// knownPrice reports whether price (USD per million tokens) is a known one.
func knownPrice(price float64) bool { return price > 0 && price <= maxPrice }

// dollars is bill (thousandths of input tokens' worth) at price USD per
// million tokens: bill/1000 × price/10^6 dollars, which is bill × price
// nanodollars. An unknown price or an absurd product counts as none.
func dollars(bill inputs, price float64) usd {
	if !knownPrice(price) {
		return 0
	}
	f := math.Round(float64(bill) * price)
	if math.IsNaN(f) || math.Abs(f) > 1e18 {
		return 0
	}
	return usd(f)
}

func (v usd) float() float64 { return float64(v) / 1e9 }

func (v usd) MarshalJSON() ([]byte, error) {
	return strconv.AppendFloat(nil, v.float(), 'f', -1, 64), nil
}

func (v *usd) UnmarshalJSON(b []byte) error {
	f, err := strconv.ParseFloat(string(b), 64)
	if math.IsNaN(f) || math.Abs(f) > 1e9 {
		f = 0
	}
	*v = usd(math.Round(f * 1e9))
	return err
}

// The arms of the holdout comparison (condense.holdout_share), as indexes
// of totals.Arms.
const (
	armCondensed = iota
	armHoldout
)

// armIndex is the index of a report's arm, or -1 when it has none.
func armIndex(arm string) int {
	switch arm {
	case condense.ArmCondensed:
		return armCondensed
	case condense.ArmHoldout:
		return armHoldout
	}
	return -1
}

// armSums add up one arm's conversations and requests and their
// estimated cost: the bill of what was forwarded (a holdout request's:
// the request as received) and the summarizer calls made for them (the
// holdout arm makes none), in input tokens' worth and, for the priced
// requests, in dollars. A conversation counts in its arm when the page
// first sees it there (one dropped from the page and seen again counts
// again).
type armSums struct {
	Conversations int64  `json:"conversations"`
	Requests      int64  `json:"requests"`
	Cost          inputs `json:"cost"`
	CostUSD       usd    `json:"cost_usd"`
	Priced        int64  `json:"priced"` // requests with a known input price
	// The measured cost: the input bill of the usage the answers
	// reported plus the summarizer's estimated spend (its calls' usage is
	// not measured), of the Measured requests; NotReported are billed
	// requests whose answers reported no usage (while there is one, the
	// arm has no measured cost per conversation).
	Measured        int64  `json:"measured"`
	NotReported     int64  `json:"not_reported"`
	MeasuredCost    inputs `json:"measured_cost"`
	MeasuredCostUSD usd    `json:"measured_cost_usd"`
}

func (a *armSums) add(rep *condense.Report, m *proxy.Measured) {
	a.Requests++
	cost := inputsOf(rep.Bill) + inputsOf(rep.SummarizerSpend)
	a.Cost += cost
	if knownPrice(rep.InputPrice) {
		a.Priced++
		a.CostUSD += dollars(cost, rep.InputPrice)
	}
	switch {
	case m == nil:
	case !m.Reported:
		a.NotReported++
	default:
		a.Measured++
		mc := inputsOf(m.Bill) + inputsOf(rep.SummarizerSpend)
		a.MeasuredCost += mc
		a.MeasuredCostUSD += dollars(mc, rep.InputPrice)
	}
}

// measuredSums add up what the upstream's answers reported (proxy's
// measured usage) of the billed requests: Requests whose answers
// reported usage, NotReported those whose did not; the prompt tokens
// read from the cache, written to it (CacheWrite1h of them for an hour)
// and uncached; the output; the measured input bill in units of the
// input price (and in dollars for the requests with a price: Priced);
// and, for the same requests, the engine's estimate: its count of the
// forwarded requests (EstimatedInput, against FirstPrompt, the first
// answers' prompts) and its bill (EstimatedBill).
type measuredSums struct {
	Requests       int64  `json:"requests"`
	NotReported    int64  `json:"not_reported"`
	CacheRead      int64  `json:"cache_read"`
	CacheWrite     int64  `json:"cache_write"`
	CacheWrite1h   int64  `json:"cache_write_1h"`
	Uncached       int64  `json:"uncached"`
	Output         int64  `json:"output"`
	Bill           inputs `json:"bill"`
	BillUSD        usd    `json:"-"` // shown by measuredJSON (null: no price)
	Priced         int64  `json:"priced"`
	FirstPrompt    int64  `json:"first_prompt"`
	EstimatedInput int64  `json:"estimated_input"`
	EstimatedBill  inputs `json:"estimated_bill"`
}

func (s *measuredSums) add(rep *condense.Report, m *proxy.Measured) {
	switch {
	case m == nil:
		return
	case !m.Reported:
		s.NotReported++
		return
	}
	s.Requests++
	u := m.Usage
	s.CacheRead += int64(u.CacheRead)
	s.CacheWrite += int64(u.CacheWrite)
	s.CacheWrite1h += int64(u.CacheWrite1h)
	s.Uncached += int64(u.Uncached)
	s.Output += int64(u.Output)
	b := inputsOf(m.Bill)
	s.Bill += b
	if knownPrice(rep.InputPrice) {
		s.Priced++
		s.BillUSD += dollars(b, rep.InputPrice)
	}
	if _, ok := m.EstimateError(rep); ok {
		s.FirstPrompt += int64(m.FirstPrompt)
		s.EstimatedInput += int64(rep.TokensAfter)
	}
	s.EstimatedBill += inputsOf(rep.Bill)
}

// input is the prompts' tokens in all.
func (s *measuredSums) input() int64 { return s.CacheRead + s.CacheWrite + s.Uncached }

// observeSums add up the requests of observe mode (applied "observe"):
// forwarded as received, with what auto would have forwarded instead.
type observeSums struct {
	Requests         int64  `json:"requests"`
	WouldCondense    int64  `json:"would_condense"` // auto would have condensed them
	TokensReceived   int64  `json:"tokens_received"`
	WouldTokensAfter int64  `json:"would_tokens_after"`
	Bill             inputs `json:"bill"` // of the requests as received (and forwarded)
	WouldBill        inputs `json:"would_bill"`
	WouldCacheRead   int64  `json:"would_cache_read"`
	WouldCacheWrite  int64  `json:"would_cache_write"`
}

func (o *observeSums) add(rep *condense.Report) {
	if rep.Applied != condense.AppliedObserve {
		return
	}
	o.Requests++
	if appliedKey(rep.WouldApply) != condense.AppliedNone {
		o.WouldCondense++
	}
	o.TokensReceived += int64(rep.TokensBefore)
	o.WouldTokensAfter += int64(rep.WouldTokensAfter)
	o.Bill += inputsOf(rep.Bill)
	o.WouldBill += inputsOf(rep.WouldBill)
	o.WouldCacheRead += int64(rep.WouldCacheRead)
	o.WouldCacheWrite += int64(rep.WouldCacheWrite)
}

// modeCounts are the outcomes of requests asking for one mode.
type modeCounts struct {
	Condensed  int64            `json:"condensed"`
	Unchanged  int64            `json:"unchanged"`
	Passed     int64            `json:"passed"`
	NotCounted int64            `json:"not_counted"`
	Applied    map[string]int64 `json:"applied"` // full, selective, truncate
	Degraded   int64            `json:"degraded"`
}

type modelCounts struct {
	Requests        int64 `json:"requests"`
	Condensed       int64 `json:"condensed"`
	Degraded        int64 `json:"degraded"`
	TokensReceived  int64 `json:"tokens_received"`
	TokensForwarded int64 `json:"tokens_forwarded"`
	PrefixReused    int64 `json:"prefix_reused"`
	PrefixForwarded int64 `json:"prefix_forwarded"`
	SummarizerCalls int64 `json:"summarizer_calls"`
	billSums
}

// inputs is an amount billed in units of the model's input price (input
// tokens' worth), kept in thousandths so that sums are exact whatever the
// order requests are recorded in. In JSON it is a plain number of input
// tokens' worth.
type inputs int64

// inputsOf rounds f to thousandths; NaN, infinities and amounts beyond
// 10^15 (no bill is) count as none rather than overflow.
func inputsOf(f float64) inputs {
	if math.IsNaN(f) || math.Abs(f) > 1e15 {
		return 0
	}
	return inputs(math.Round(f * 1000))
}

func (v inputs) float() float64 { return float64(v) / 1000 }

func (v inputs) MarshalJSON() ([]byte, error) {
	return strconv.AppendFloat(nil, v.float(), 'f', -1, 64), nil
}

func (v *inputs) UnmarshalJSON(b []byte) error {
	f, err := strconv.ParseFloat(string(b), 64)
	*v = inputsOf(f)
	return err
}

type minuteCounts struct {
	minute    int64 // unix minute this bucket holds
	requests  int64
	condensed int64
	received  int64
	forwarded int64
}

func newStore(maxConvs, maxReqs, maxDetailBytes int, now time.Time) *store {
	return &store{
		maxConvs: maxConvs, maxReqs: maxReqs, maxDetailBytes: maxDetailBytes,
		started:  now,
		changed:  make(chan struct{}),
		convs:    make(map[convKey]*conversation),
		byID:     make(map[string]*conversation),
		byScope:  make(map[string]int),
		modes:    make(map[string]*modeCounts),
		models:   make(map[string]*modelCounts),
		degraded: make(map[string]int),
	}
}

func outcomeOf(rep *condense.Report) string {
	switch {
	case !rep.Counted:
		return outcomeNotCounted
	case rep.Applied != "" && rep.Applied != condense.AppliedNone && rep.Applied != condense.AppliedObserve:
		return outcomeCondensed
	case rep.Trigger > 0 && rep.TokensBefore > rep.Trigger:
		return outcomeUnchanged
	default:
		return outcomePassed
	}
}

// prefixKnown reports whether rep's PrefixReused means something: the
// engine sets it for conversations it identified, -1 when it knows no
// previous request.
func prefixKnown(rep *condense.Report) bool {
	return rep.Conversation != "" && rep.PrefixReused >= 0
}

// record adds ev. It is on the request path: constant work plus copies of
// the report's changes and shapes.
func (s *store) record(ev *proxy.Event) {
	rep := &ev.Report
	out := outcomeOf(rep)
	degraded := rep.Degraded != ""
	var kinds [3]int
	for i := range rep.Changes {
		switch rep.Changes[i].Kind {
		case condense.ChangeSummary:
			kinds[0]++
		case condense.ChangeDigest:
			kinds[1]++
		case condense.ChangeWindow:
			kinds[2]++
		}
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	t := &s.tot
	t.Requests++
	t.Recalls += int64(len(ev.Recalls))
	if ev.Status >= 400 || ev.Status == 0 {
		t.Errors++
	}
	t.TokensReceived += int64(rep.TokensBefore)
	t.TokensForwarded += int64(rep.TokensAfter)
	if prefixKnown(rep) {
		t.PrefixReused += int64(rep.PrefixReused)
		t.PrefixForwarded += int64(rep.TokensAfter)
		t.PrefixRequests++
	}
	t.SummarizerCalls += int64(rep.Calls)
	t.billSums.add(rep)
	t.Observe.add(rep)
	if i := armIndex(rep.Arm); i >= 0 && rep.Counted {
		t.Arms[i].add(rep, ev.Measured)
	}
	t.Measured.add(rep, ev.Measured)
	if degraded {
		t.Degraded++
		reason := degradedKey(rep)
		if _, ok := s.degraded[reason]; !ok && len(s.degraded) >= maxDegradedReasons {
			reason = otherKey
		}
		if _, ok := s.degraded[reason]; !ok {
			reason = strings.Clone(reason)
		}
		s.degraded[reason]++
	}

	mc := s.modes[modeKey(ev.Mode)]
	if mc == nil {
		mc = &modeCounts{Applied: make(map[string]int64)}
		s.modes[modeKey(ev.Mode)] = mc
	}
	switch out {
	case outcomeCondensed:
		mc.Condensed++
		mc.Applied[appliedKey(rep.Applied)]++
	case outcomeUnchanged:
		mc.Unchanged++
	case outcomePassed:
		mc.Passed++
	default:
		mc.NotCounted++
	}
	if degraded {
		mc.Degraded++
	}

	if rep.Counted {
		model := boundedModel(rep.Model)
		m := s.models[model]
		if m == nil {
			if len(s.models) >= maxModels {
				model = otherKey
				m = s.models[model]
			}
			if m == nil {
				m = &modelCounts{}
				s.models[strings.Clone(model)] = m
			}
		}
		m.Requests++
		m.TokensReceived += int64(rep.TokensBefore)
		m.TokensForwarded += int64(rep.TokensAfter)
		m.SummarizerCalls += int64(rep.Calls)
		m.billSums.add(rep)
		if out == outcomeCondensed {
			m.Condensed++
		}
		if degraded {
			m.Degraded++
		}
		if prefixKnown(rep) {
			m.PrefixReused += int64(rep.PrefixReused)
			m.PrefixForwarded += int64(rep.TokensAfter)
		}
	}

	um := ev.Time.Unix() / 60
	b := &s.minute[um%minutes]
	if b.minute != um {
		*b = minuteCounts{minute: um}
	}
	b.requests++
	b.received += int64(rep.TokensBefore)
	b.forwarded += int64(rep.TokensAfter)
	if out == outcomeCondensed {
		b.condensed++
	}

	if rep.Counted {
		fresh := s.addToConversation(ev, out, kinds)
		t.Summaries += int64(fresh[0])
		t.SummariesCached += int64(min(max(fresh[0]-rep.SummariesMade, 0), rep.SummariesCached))
		t.Digests += int64(fresh[1])
		t.Windows += int64(fresh[2])
	}
	s.version++
	close(s.changed)
	s.changed = make(chan struct{})
}

// addToConversation appends ev's row to its conversation, making room as
// the bounds require, and returns the changes new in this request by kind.
// mu is held.
func (s *store) addToConversation(ev *proxy.Event, out string, kinds [3]int) [3]int {
	rep := &ev.Report
	c := s.convs[convKey{ev.Scope, rep.Conversation}]
	if c == nil {
		for len(s.convs) >= s.maxConvs {
			s.dropConversation(s.evictee(ev.Scope))
		}
		key := convKey{strings.Clone(ev.Scope), strings.Clone(rep.Conversation)}
		sum := sha256.Sum256([]byte(key.scope + "\x00" + key.conv))
		tag := sha256.Sum256([]byte(key.scope))
		c = &conversation{
			id:     hex.EncodeToString(sum[:8]),
			key:    key,
			caller: hex.EncodeToString(tag[:3]),
			first:  ev.Time,
			rows:   make([]row, 0, min(s.maxReqs, 16)),
		}
		c.elem = s.lru.PushFront(c)
		s.byScope[key.scope]++
		s.convs[key] = c
		s.byID[c.id] = c
	} else {
		s.lru.MoveToFront(c.elem)
	}
	if c.transient != nil {
		s.dropDetail(c.transient)
	}
	if model := boundedModel(rep.Model); c.model != model {
		c.model = strings.Clone(model)
	}
	ua := ev.UserAgent
	if len(ua) > maxUserAgent {
		ua = ua[:maxUserAgent]
	}
	if c.userAgent != ua {
		c.userAgent = strings.Clone(ua)
	}
	if c.format != rep.Format && rep.Format != "" {
		c.format = strings.Clone(rep.Format)
	}
	c.last = ev.Time
	c.total++
	if out == outcomeCondensed {
		c.condensed++
	}
	if rep.Degraded != "" {
		c.degraded++
	}
	c.bill.add(rep)
	c.measured.add(rep, ev.Measured)
	c.observed.add(rep)
	if i := armIndex(rep.Arm); i >= 0 && c.arm != rep.Arm {
		c.arm = condense.ArmCondensed
		if i == armHoldout {
			c.arm = condense.ArmHoldout
		}
		s.tot.Arms[i].Conversations++
	}
	fresh := c.freshChanges(rep.Changes)

	r := row{
		n: c.total, time: ev.Time, status: ev.Status, duration: ev.Duration,
		mode: modeKey(ev.Mode), applied: appliedKey(rep.Applied), outcome: out,
		before: rep.TokensBefore, after: rep.TokensAfter, window: rep.Window, trigger: rep.Trigger,
		calls: rep.Calls, prefix: -1, messages: rep.Messages, compaction: rep.AgentCompaction,
		summaries: kinds[0], digests: kinds[1], windows: kinds[2], fresh: fresh,
		degraded:  rep.Degraded != "",
		cacheRead: rep.CacheRead, cacheWrite: rep.CacheWrite, bill: rep.Bill, billUncondensed: rep.BillUncondensed,
		recalls: len(ev.Recalls),
	}
	if ev.Measured != nil {
		m := *ev.Measured
		r.measured = &m
	}
	if knownPrice(rep.InputPrice) {
		r.price = rep.InputPrice
	}
	if rep.Applied == condense.AppliedObserve {
		r.wouldApply, r.wouldAfter, r.wouldBill = appliedKey(rep.WouldApply), rep.WouldTokensAfter, rep.WouldBill
		r.wouldRead, r.wouldWrite = rep.WouldCacheRead, rep.WouldCacheWrite
	}
	if prefixKnown(rep) {
		r.prefix = rep.PrefixReused
	}
	r.detail = s.newDetail(c, rep, ev.Recalls)
	// Condensed, degraded and recalling requests keep their detail
	// (within the budget); any other only while it is the latest.
	if r.detail != nil && out != outcomeCondensed && !r.degraded && r.recalls == 0 {
		c.transient = r.detail
	}
	if len(c.rows) < s.maxReqs {
		c.rows = append(c.rows, r)
	} else {
		old := &c.rows[(r.n-1)%s.maxReqs]
		if old.detail != nil {
			s.dropDetail(old.detail)
		}
		*old = r
	}
	if r.detail != nil {
		s.trimDetails(r.detail)
	}
	return fresh
}

// freshChanges counts, by kind, the changes that were not in c's previous
// request (a new summary, digest or window), and remembers these.
func (c *conversation) freshChanges(changes []condense.Change) [3]int {
	var fresh [3]int
	if len(changes) == 0 && len(c.prevIDs) == 0 {
		return fresh
	}
	ids := make(map[string]string, len(changes))
	for i := range changes {
		ch := &changes[i]
		id := changeKey(ch)
		if kept, ok := c.prevIDs[id]; ok {
			ids[kept] = kept // the kept copy, not the report's string
			continue
		}
		kept := strings.Clone(id)
		ids[kept] = kept
		switch ch.Kind {
		case condense.ChangeSummary:
			fresh[0]++
		case condense.ChangeDigest:
			fresh[1]++
		case condense.ChangeWindow:
			fresh[2]++
		}
	}
	c.prevIDs = ids
	return fresh
}

// changeKey identifies a change across requests: its originals id, else
// its kind and place.
func changeKey(ch *condense.Change) string {
	if ch.ID != "" {
		return ch.ID
	}
	return ch.Kind + ":" + strconv.Itoa(ch.From) + "-" + strconv.Itoa(ch.To) + ":" + strconv.Itoa(ch.TokensAfter)
}

// row returns request n of c, or nil when it is not kept.
func (s *store) row(c *conversation, n int) *row {
	if n < 1 || n > c.total || n <= c.total-len(c.rows) {
		return nil
	}
	return &c.rows[(n-1)%s.maxReqs]
}

// evictee is the conversation dropped to make room for one of scope:
// the least recently active of the caller scope keeping the most
// conversations, the newcomer counted (so at a tie its own caller pays),
// so one caller's new conversations push out its own, never another
// caller's while it keeps fewer. mu is held; the store is not empty.
func (s *store) evictee(scope string) *conversation {
	count := func(sc string) int {
		if sc == scope {
			return s.byScope[sc] + 1
		}
		return s.byScope[sc]
	}
	most := 0
	for sc := range s.byScope {
		most = max(most, count(sc))
	}
	for e := s.lru.Back(); e != nil; e = e.Prev() {
		if c := e.Value.(*conversation); count(c.key.scope) == most {
			return c
		}
	}
	return s.lru.Back().Value.(*conversation)
}

func (s *store) dropConversation(c *conversation) {
	for i := range c.rows {
		if d := c.rows[i].detail; d != nil {
			s.dropDetail(d)
		}
	}
	s.lru.Remove(c.elem)
	if s.byScope[c.key.scope]--; s.byScope[c.key.scope] <= 0 {
		delete(s.byScope, c.key.scope)
	}
	delete(s.convs, c.key)
	delete(s.byID, c.id)
}

// newDetail copies what the detail view needs from rep and adds it to the
// budget; nil when it alone is over the budget.
func (s *store) newDetail(c *conversation, rep *condense.Report, recalls []memory.Recalled) *detail {
	d := &detail{conv: c, n: c.total}
	size := 256 + len(rep.Reason) + len(rep.Summaries) + len(rep.Cache) + len(rep.Degraded)
	size += 16 * (len(rep.Path) + len(rep.DegradedKinds))
	for _, rc := range recalls {
		size += 128 + min(len(rc.Answer), maxTextBytes) + min(len(rc.Query), maxTextBytes) + 40*len(rc.Items)
	}
	for i := range rep.Changes {
		size += 128 + min(len(rep.Changes[i].Text), maxTextBytes) + len(rep.Changes[i].Tool) + len(rep.Changes[i].ID)
	}
	size += 32 * (len(rep.Received) + len(rep.Forwarded))
	if size > s.maxDetailBytes {
		return nil
	}
	d.size = size
	d.reason = strings.Clone(rep.Reason)
	d.summaries = strings.Clone(rep.Summaries)
	d.cache = strings.Clone(rep.Cache)
	d.degraded = strings.Clone(rep.Degraded)
	d.path, d.degradedKinds = slices.Clone(rep.Path), slices.Clone(rep.DegradedKinds)
	if len(rep.Changes) > 0 {
		d.changes = make([]condense.Change, len(rep.Changes))
		for i, ch := range rep.Changes {
			ch.Kind = internKind(ch.Kind)
			ch.ID = strings.Clone(ch.ID)
			ch.Tool = strings.Clone(ch.Tool)
			ch.Text = clip(ch.Text)
			d.changes[i] = ch
		}
	}
	for _, rc := range recalls {
		d.recalls = append(d.recalls, memory.Recalled{Query: clip(rc.Query), ID: strings.Clone(rc.ID), Outcome: internKind(rc.Outcome),
			Items: slices.Clone(rc.Items), Answer: clip(rc.Answer)})
	}
	d.received = copyShapes(rep.Received)
	d.forwarded = copyShapes(rep.Forwarded)
	d.elem = s.details.PushBack(d)
	s.detailBytes += size
	return d
}

// trimDetails drops the oldest details until the budget holds; keep,
// the newest, stays.
func (s *store) trimDetails(keep *detail) {
	for s.detailBytes > s.maxDetailBytes {
		d := s.details.Front().Value.(*detail)
		if d == keep {
			return
		}
		s.dropDetail(d)
	}
}

func (s *store) dropDetail(d *detail) {
	if d.elem == nil {
		return
	}
	s.details.Remove(d.elem)
	d.elem = nil
	s.detailBytes -= d.size
	if r := s.row(d.conv, d.n); r != nil && r.detail == d {
		r.detail = nil
	}
	if d.conv.transient == d {
		d.conv.transient = nil
	}
}

// watch returns the current version and a channel closed at the next
// change.
func (s *store) watch() (uint64, <-chan struct{}) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.version, s.changed
}

func copyShapes(in []condense.ItemShape) []condense.ItemShape {
	if in == nil {
		return nil
	}
	out := make([]condense.ItemShape, len(in))
	for i, it := range in {
		out[i] = condense.ItemShape{Role: internRole(it.Role), Tokens: it.Tokens}
	}
	return out
}

// internRole returns a constant for the usual roles, so a kept shape
// holds no view into a request body.
func internRole(r string) string {
	switch r {
	case "system":
		return "system"
	case "developer":
		return "developer"
	case "user":
		return "user"
	case "assistant":
		return "assistant"
	case "tool":
		return "tool"
	case "function":
		return "function"
	case "summary":
		return "summary"
	case "":
		return ""
	}
	if len(r) > 32 {
		r = r[:32]
	}
	return strings.Clone(r)
}

func internKind(k string) string {
	switch k {
	case condense.ChangeSummary:
		return condense.ChangeSummary
	case condense.ChangeDigest:
		return condense.ChangeDigest
	case condense.ChangeWindow:
		return condense.ChangeWindow
	}
	return strings.Clone(k)
}

// boundedModel is the model name the page keeps: proxy.ModelName's
// bound, and the name itself (not a copy) when it is short enough.
func boundedModel(m string) string {
	if len(m) <= proxy.MaxModelName {
		return m
	}
	return proxy.ModelName(m)
}

func modeKey(m string) string {
	if m == "" {
		return condense.ModeAuto
	}
	if i := slices.Index(condense.Modes, m); i >= 0 {
		return condense.Modes[i]
	}
	return otherKey
}

func appliedKey(a string) string {
	switch a {
	case "", condense.AppliedNone:
		return condense.AppliedNone
	case condense.AppliedFull:
		return condense.AppliedFull
	case condense.AppliedTruncate:
		return condense.AppliedTruncate
	case condense.ModeSelective:
		return condense.ModeSelective
	case condense.AppliedObserve:
		return condense.AppliedObserve
	}
	return otherKey
}

// degradedKey is the row rep's degraded reason counts in: its kind
// (degradedCategory) and, when the report names it, its first fallback's
// kind (condense.Report.DegradedKinds), after a NUL — reasons alike in
// their words but of other kinds count apart (splitKey).
func degradedKey(rep *condense.Report) string {
	reason := degradedCategory(rep.Degraded)
	if len(rep.DegradedKinds) > 0 {
		return rep.DegradedKinds[0] + "\x00" + reason
	}
	return reason
}

// splitKey returns the fallback kind and the reason of a degradedKey.
func splitKey(key string) (kind, reason string) {
	if kind, reason, ok := strings.Cut(key, "\x00"); ok {
		return kind, reason
	}
	return "", key
}

// maxReasonKind bounds a degraded reason's kind (bytes).
const maxReasonKind = 80

// degradedCategory is the kind of a degraded reason, so reasons group: its
// first clause, before its details ("summarizer failed: 502 …" →
// "summarizer failed"), every number in it written N ("auto's LLM
// summaries would cost about N input tokens' worth, over its allowance of
// N"), spaces collapsed, and at most maxReasonKind bytes, cut between
// words with "…".
func degradedCategory(s string) string {
	if i := strings.IndexAny(s, ":(;"); i > 0 {
		s = s[:i]
	}
	var b strings.Builder
	digits := false
	for _, f := range strings.Fields(s) {
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		for i := 0; i < len(f); i++ {
			c := f[i]
			// A number: digits, with the separators inside it.
			number := c >= '0' && c <= '9' || digits && (c == '.' || c == ',') && i+1 < len(f) && f[i+1] >= '0' && f[i+1] <= '9'
			if number && !digits {
				b.WriteByte('N')
			}
			if !number {
				b.WriteByte(c)
			}
			digits = number
		}
		digits = false
	}
	s = b.String()
	if len(s) <= maxReasonKind {
		return s
	}
	cut := strings.LastIndexByte(s[:maxReasonKind], ' ')
	if cut <= 0 {
		// One long word: cut at a rune boundary.
		for cut = maxReasonKind; cut > 0 && s[cut]&0xC0 == 0x80; cut-- {
		}
	}
	return strings.TrimRight(s[:cut], " ,.") + "…"
}

// clip copies s, at most maxTextBytes of it.
func clip(s string) string {
	if len(s) <= maxTextBytes {
		return strings.Clone(s)
	}
	cut := maxTextBytes
	for cut > 0 && s[cut]&0xC0 == 0x80 { // not inside a UTF-8 sequence
		cut--
	}
	// The concatenation is a new string: nothing of s is kept beyond it.
	return s[:cut] + "\n[… " + strconv.Itoa(len(s)-cut) + " more bytes not kept by the page]"
}
