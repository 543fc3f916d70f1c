// Package condense decides whether a request must be condensed and
// condenses it, planning every edit by the bill it produces.
//
// The proxy hands the Engine the raw request body and the codec of its
// wire format. A request travels through the stages below, one file each:
//
//	decide.go     scan (the codec) → count against the model's threshold →
//	              off, observe (observe.go), an agent's own compaction
//	              (compaction.go) or a mode
//	plan.go       the conversation's plan: the cost model (cost.go) chooses
//	              how far cuts move and where the digest frontier stands,
//	              each choice frozen per conversation (memo.go)
//	selective.go  digests of old tool outputs, all the frontier passed, in
//	              one edit
//	fold.go       full mode: complete chunks folded into summaries, within
//	              the summarizer call budget
//	window.go     the sliding window: the newest steps, the cut remembered;
//	              auto's summaries of what it omits (cutsummary.go)
//	summarize.go  summaries: cached, shared by concurrent requests and
//	              replicas (flight.go), LLM or extractive (extractive.go),
//	              hierarchical
//	prepare.go    summaries the next fold needs, written in the background
//	bill.go       the request forwarded, priced against the provider's prompt
//	              cache (prefix.go: each conversation's last request)
//	report.go     what was replaced by what, for the headers, the log line,
//	              the page and the originals (originals.go, memory.go)
//	engine.go     splice and count: the body forwarded is one splice of
//	              the body as received, digests with a window too — the
//	              window is planned on the digested copy, and its edit,
//	              composed with the digests of the items it keeps
//	              (view.Compose), is written by one Codec.Splice; digests
//	              alone are selective's one patch pass —; the body
//	              forwarded is counted from its edit (view.Deriver), never
//	              scanned again. (A fold whose result is still over the
//	              limit is windowed by a second splice of the received
//	              body, the first dropped.)
//
// It returns the body to forward — the very same bytes when nothing was
// done — and a Report of what happened. The Engine never turns a request
// it does not understand into a different one: a body that is not a
// request of its format is returned untouched.
package condense

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/condense-proxy/condense-proxy/selective"
	"github.com/condense-proxy/condense-proxy/tokenizer"
	"github.com/condense-proxy/condense-proxy/view"
)

// Modes a request can ask for.
const (
	ModeAuto      = "auto"
	ModeFull      = "full"
	ModeSelective = "selective"
	ModeTruncate  = "truncate"
	ModeOff       = "off"
	// ModeObserve forwards every request as received and reports what
	// auto would have forwarded (Report.Would*) and its bill.
	ModeObserve = "observe"
)

// Applied values of a Report.
const (
	AppliedNone     = "none"
	AppliedFull     = "full"
	AppliedTruncate = "truncate"
	// AppliedObserve: forwarded as received in observe mode.
	AppliedObserve = "observe"
)

// ModelLimits is what the Engine needs to know of a model.
type ModelLimits struct {
	Window    int     // context window in input tokens
	Threshold float64 // fraction of Window that triggers condensing
	// Target is the fraction of Window condensing aims for; 0:
	// Options.Target.
	Target       float64
	Encoding     string  // tokenizer encoding
	SafetyFactor float64 // >= 1; multiplies counts of non-OpenAI models
	// CacheRead and CacheWrite are the prompt cache's read and write
	// prices as multiples of the input price, CacheTTL how long the cache
	// lives idle; zero: 0.1, 1.25 and 5 minutes (Anthropic's).
	CacheRead, CacheWrite float64
	CacheTTL              time.Duration
	// MaxOutput is the room the answer needs (the model's output limit);
	// a request is condensed at the latest when it would leave less than
	// that of the window. 0: unknown.
	MaxOutput int
	// Family names the model's registry entry (a bounded label for
	// metrics); "": unknown.
	Family string
	// MinCachedPrefix is the shortest prefix the provider caches, in
	// tokens; 0: 1024.
	MinCachedPrefix int
	// InputPrice is the model's input price in USD per million tokens,
	// carried to the report for showing dollars, and relating a summary
	// model's prices to the request's model's; 0: unknown.
	InputPrice float64
	// OutputPrice is the model's output price as a multiple of its input
	// price, what the summaries it writes are priced at; 0: 5
	// (Anthropic's).
	OutputPrice float64
}

// Models resolves a model name to its limits.
type Models interface {
	Limits(model string) ModelLimits
}

// ModelsFunc adapts a function to Models.
type ModelsFunc func(model string) ModelLimits

// Limits calls f.
func (f ModelsFunc) Limits(model string) ModelLimits { return f(model) }

// Cache is what the Engine needs of a cache (package cache satisfies it).
type Cache interface {
	Get(ctx context.Context, key string) ([]byte, bool)
	Set(ctx context.Context, key string, value []byte, ttl time.Duration)
}

// Observer receives the Engine's events, for metrics. Its methods must not
// block.
type Observer interface {
	Condensed(mode, outcome string, tokensSaved int)
	SummarizerCall(d time.Duration, err error)
}

// Options configures an Engine. Zero values pick the defaults.
type Options struct {
	// Target is the fraction of the window condensing aims for. Default 0.5.
	Target float64
	// PrepareThreshold starts background summaries above this fraction of
	// the window; 0: threshold - 0.1.
	PrepareThreshold float64
	// MaxMessages triggers condensing above this many messages; 0: off.
	MaxMessages int
	// KeepRecentTurns is the minimum number of recent steps kept. Default 3.
	KeepRecentTurns int
	// ChunkTokens is the size of a level-1 chunk. Default 12000.
	ChunkTokens int
	// SummaryBudgetTokens bounds the summaries of one level. Default 8000.
	SummaryBudgetTokens int
	// Summarizer is "llm" or "extractive". Default "llm" (extractive when
	// no Summarizer is given).
	Summarizer string
	// SummaryModel is the summarizer's model; "": the request's model.
	SummaryModel string
	// SummaryTimeout bounds one summarizer call. Default 60s.
	SummaryTimeout time.Duration
	// MaxWait bounds how long one request waits for summaries: past it the
	// request goes on with what is ready (extractive summaries, the
	// window) and says so in its report; the summarizer calls already
	// started finish in the background and are cached. Default 30s.
	MaxWait time.Duration
	// SummaryMaxTokens bounds one summary. Default 2000.
	SummaryMaxTokens int
	// Prompt is the summarizer's system prompt. Default DefaultPrompt.
	Prompt string
	// OriginalsTTL is how long summaries and originals are kept. Default 24h.
	OriginalsTTL time.Duration
	// NegativeTTL is how long a failed summarizer is not called again.
	// Default 30s.
	NegativeTTL time.Duration
	// PrepareConcurrency bounds background summarizations. Default 2.
	PrepareConcurrency int
	// SummarizerConcurrency bounds summarizer calls in flight, across all
	// requests. Default 8.
	SummarizerConcurrency int
	// SelectiveEnabled is the selective feature flag: off, requests asking
	// for selective condensing get full condensing, and auto means full.
	SelectiveEnabled bool
	// Selective configures selective condensing.
	Selective selective.Options
	// MinSavingsTokens is the least selective condensing frees once it
	// starts; 0: 10% of the window.
	MinSavingsTokens int
	// SelectiveSummarizer is "extractive" (deterministic digests, the
	// default) or "llm" (the Summarizer digests each output once; the
	// deterministic digest is the fallback).
	SelectiveSummarizer string
	// MaxSummarizerCalls bounds the summarizer calls one request (or one
	// background preparation) may make; a plan that needs more makes
	// none, and past the bound extractive summaries stand in. Default 16.
	MaxSummarizerCalls int
	// DigestInputBytes bounds the tool output an LLM digest is asked
	// about (its middle is cut); DigestMaxTokens bounds the digest.
	// Defaults 24000 and 600.
	DigestInputBytes, DigestMaxTokens int
	// NoColdTurns turns cold turns off (cold.go): a request after an
	// idle gap past the model's cache lifetime is condensed as any
	// other. Default false: they are on.
	NoColdTurns bool
	// SelectiveEager digests old tool outputs from the first request on,
	// in selective and auto modes, below the threshold too. Default false.
	SelectiveEager bool
	// DigestsFirst: a conversation's first digests go alone even when
	// they would not pay before the window (auto: the cut) has to come
	// (plan.go's windowNowOf). Default false: the window comes on their
	// bust.
	DigestsFirst bool
	// RelevantTokens, with a Memory, puts the memory's steps most relevant
	// to the conversation's focus beside its summaries (or its window
	// marker), within this many tokens, made once per cut (memory.go).
	// 0: none.
	RelevantTokens int
	// RecallTool is the tool the proxy adds to every request of a
	// conversation condensed once (memory.recall_tool), nil when it adds
	// none. Summaries asked in place continue the request forwarded
	// before them, so they carry it too when that request did: a
	// request whose tools differ reads nothing of the provider's cache.
	RecallTool *view.Tool
	// AutoLLMShare bounds what auto spends on LLM summaries of a
	// conversation: this share of what the conversation would have cost
	// uncondensed so far (estimated); past it, its summaries are
	// extractive. 0: 0.02. Negative: never the LLM in auto.
	AutoLLMShare float64
	// StandIns is what stands for the steps auto's cut omits:
	// StandInSummaries ("" too) or StandInNotes.
	StandIns string
	// HoldoutShare is the share of conversations, in [0, 1], forwarded
	// as received — the holdout arm, chosen by inHoldout — while what
	// their mode would have forwarded is reported (holdout.go). 0: none.
	HoldoutShare float64
}

// What stands for the steps auto's cut omits (Options.StandIns).
const (
	// StandInSummaries: summaries keeping the task, the error lines, the
	// decisions and the paths, with the ids to recall each original.
	StandInSummaries = "summaries"
	// StandInNotes: notes of what was there (calls, errors, the user's
	// words, files) and the ids the recall tool finds it by; no summary.
	StandInNotes = "notes"
)

// defaults sets every option left at its zero value (or below it) to its
// default.
func (o *Options) defaults() {
	setDefault(&o.Target, 0.5)
	setDefault(&o.KeepRecentTurns, 3)
	setDefault(&o.ChunkTokens, 12000)
	setDefault(&o.SummaryBudgetTokens, 8000)
	setDefault(&o.Summarizer, "llm")
	setDefault(&o.SummaryTimeout, 60*time.Second)
	setDefault(&o.MaxWait, 30*time.Second)
	setDefault(&o.SummaryMaxTokens, 2000)
	setDefault(&o.Prompt, DefaultPrompt)
	setDefault(&o.OriginalsTTL, 24*time.Hour)
	setDefault(&o.NegativeTTL, 30*time.Second)
	setDefault(&o.PrepareConcurrency, 2)
	setDefault(&o.SummarizerConcurrency, 8)
	setDefault(&o.MaxSummarizerCalls, 16)
	setDefault(&o.DigestInputBytes, 24000)
	setDefault(&o.DigestMaxTokens, 600)
	if o.AutoLLMShare == 0 {
		o.AutoLLMShare = 0.02
	}
}

// setDefault sets *v to def when it is at or below its zero value.
func setDefault[T cmp.Ordered](v *T, def T) {
	var zero T
	if *v <= zero {
		*v = def
	}
}

// Request is one request to condense.
type Request struct {
	Body []byte
	// Codec reads and writes the body's wire format (the route's); nil:
	// the request is forwarded unchanged.
	Codec view.Codec
	Mode  string // one of the Mode constants; "" means ModeAuto
	Force bool   // condense even under the threshold
	// Scope identifies the caller (a hash of its credentials, never the
	// credentials); cache keys that depend on the conversation include it.
	Scope string
	// Credentials are the caller's own headers (Authorization…) for the
	// summarizer's upstream call. Never logged or cached.
	Credentials http.Header
	// CountOnly asks what would be forwarded without side effects (a
	// count_tokens request): no summarizer call (summaries and digests
	// come from the cache or are extractive), nothing written, no
	// background work, no metrics.
	CountOnly bool

	// Slot, if set, is the caller's hold on a bounded place (the proxy's
	// places for CPU work): the engine releases it while it waits for
	// the summarizer, so waiting holds no place, and takes it back before
	// it goes on.
	Slot Slot

	// observing: the would-be run of observe mode (CountOnly, with its
	// decisions kept in a namespace of their own).
	observing bool
	// scanned, when set, is Body already scanned by Codec (a holdout
	// request's would-be run reuses its count).
	scanned *view.Request
}

// Slot is a hold on one of a bounded number of places.
type Slot interface {
	// Release gives the place back (a no-op when not held).
	Release()
	// Acquire waits for a place, or until ctx ends (its error).
	Acquire(ctx context.Context) error
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
	Calls        int    // summarizer calls made for this request
	Duration     time.Duration

	// Path is what Reason tells, as data: the decisions the request took,
	// in order (Path* steps: kinds.go). DegradedKinds is what Degraded
	// tells: the fallbacks used (Degraded* kinds), one for each.
	Path, DegradedKinds []string

	// SummariesCached are the summaries of the request read from the
	// summary cache; SummariesMade those it made (by the summarizer, a
	// Call, or extractive).
	SummariesCached, SummariesMade int

	// Format is the wire format of the request (chat, messages, responses).
	Format string
	// Conversation identifies the conversation within the caller's scope
	// (a hash of the request's head); "" when the body was not counted.
	Conversation string
	// Changes lists what was replaced, when the request was condensed.
	Changes []Change
	// Received and Forwarded are the shapes of the request as received
	// and as forwarded (Forwarded is nil when nothing changed).
	Received, Forwarded []ItemShape
	// PrefixReused is how many leading tokens of the forwarded request
	// were identical to the conversation's previous forwarded request
	// (-1: no previous request known).
	PrefixReused int

	// The bill, estimated: CacheRead tokens of the forwarded request are
	// its prefix shared with the conversation's previous request, when
	// that request was within the model's cache lifetime and the prefix
	// at least 1,024 tokens (what providers cache); the rest, CacheWrite,
	// is written. Uncondensed* are the same for the request as received
	// after the previous one as received (the conversation never
	// condensed). Bill and BillUncondensed price them in units of the
	// model's input price.
	CacheRead, CacheWrite             int
	UncondensedRead, UncondensedWrite int
	Bill, BillUncondensed             float64
	// SummarizerSpend is what this request's summarizer calls cost,
	// estimated in units of the input price (their input and output at
	// the summary model's prices: Engine.summaryPrices).
	SummarizerSpend float64
	// Family is the model's registry entry (its match glob; "" when
	// unknown): a bounded label for metrics.
	Family string

	// Cold: the request came over the threshold after its conversation
	// was idle longer than the model's cache lifetime (its prefix is
	// written again anyway): it was condensed to the target (cold.go).
	Cold bool

	// Observe mode: what auto would have forwarded (WouldApply,
	// WouldTokensAfter) and that request's estimated bill (WouldBill,
	// from its own prefix log: the would-be conversation).
	WouldApply       string
	WouldTokensAfter int
	WouldBill        float64
	WouldCacheRead   int
	WouldCacheWrite  int
	// AgentCompaction names the agent whose own compaction request this
	// was ("" when it was none): see compaction.go.
	AgentCompaction string
	// Arm is the request's arm when a holdout share is set
	// (Options.HoldoutShare): ArmHoldout, forwarded as received and
	// reported as observe mode reports (Applied "observe", Would*), or
	// ArmCondensed; "" when there is no holdout share, the mode was off
	// or observe, or the body was not counted.
	Arm string
	// InputPrice is the model's input price in USD per million tokens
	// (the registry's, or the gateway's); 0: unknown. Bill ×
	// InputPrice / 1e6 is the bill in dollars.
	InputPrice float64
	// AsReceived is set when the request was to be condensed (over the
	// threshold or max_messages, forced, or under it with eager digests)
	// or could not be touched, and goes exactly as received instead
	// (Reason says why: "…; forwarded unchanged"): nothing
	// may be added to it on its way (the recall tool is not).
	AsReceived bool
	// RecallTool: the proxy adds the recall tool (Options.RecallTool) to
	// this request. Set from the conversation's first condensed request
	// on, on every request after it that is not AsReceived nor the
	// agent's own compaction — never before (a summary prepared ahead
	// does not count), so a conversation under the threshold goes byte
	// for byte.
	RecallTool bool

	safety float64 // the model's safety factor, for counts reported
	prices prices  // the model's prompt-cache prices
}

// Result is the body to forward and the report.
type Result struct {
	Body []byte
	// Headers are added to the forwarded request (a codec's Finisher may
	// need a beta header for what it set in the body).
	Headers []view.Header
	Report  Report
}

// Engine is safe for concurrent use. Close waits for background work.
type Engine struct {
	sel        *selective.Condenser
	counter    *tokenizer.Counter
	models     Models
	cache      Cache
	summarizer Summarizer
	observer   Observer
	opts       Options
	log        *slog.Logger
	now        func() time.Time
	originals  Cache
	written    *recentSet // originals written lately, not written again
	prefixes   *prefixLog // each conversation's last forwarded request, without a cache (prefix.go)
	memory     Memory     // nil: nothing remembered (memory.go)

	flight       flight
	downUntil    sync.Map // backoffKey -> unix nanos: summarizer suspended until then
	backoffSweep atomic.Int64
	prepareSem   chan struct{}
	summarizeSem chan struct{} // summarizer calls in flight
	preparing    sync.Map      // key -> struct{}: conversations being prepared
	prepared     markSet       // prepareMark of work done: not done again
	hashes       rangeHashes   // content hashes of items, across requests (steps.go)
	bg           sync.WaitGroup
	// bgCtx is the context of background work (summaries prepared
	// ahead, shared summarizer calls); bgCancel ends it when Close's
	// drain runs out of time.
	bgCtx    context.Context
	bgCancel context.CancelFunc
	// promptHash and digestHash key summaries and LLM digests by the
	// prompt that wrote them (a changed prompt_file is not served old
	// summaries).
	promptHash, digestHash string
}

// Deps are the Engine's collaborators; all but Counter and Models may be
// nil (no cache: nothing is kept between requests; no summarizer: the
// extractive summaries; no observer: no metrics; no logger: slog.Default;
// every Request names its codec).
type Deps struct {
	Counter *tokenizer.Counter
	// Originals keeps what condensing replaced, apart from the summaries
	// so large originals never push summaries out; nil: Cache.
	Originals  Cache
	Models     Models
	Cache      Cache
	Summarizer Summarizer
	Observer   Observer
	Logger     *slog.Logger
	// Memory, if set, is handed every step condensed away and every
	// summary made (memory.go); nil: none is.
	Memory Memory
	// Now is the engine's clock; nil: time.Now. Tests set it instead of
	// a package variable so engines never share one.
	Now func() time.Time
}

// New returns an Engine.
func New(d Deps, opts Options) *Engine {
	opts.defaults()
	if d.Logger == nil {
		d.Logger = slog.Default()
	}
	if d.Now == nil {
		d.Now = time.Now
	}
	var selCache selective.Cache
	if d.Cache != nil {
		selCache = d.Cache
	}
	e := &Engine{
		sel:     selective.New(opts.Selective, d.Counter.Text, selCache),
		counter: d.Counter, models: d.Models, cache: d.Cache, summarizer: d.Summarizer,
		observer: d.Observer, opts: opts, log: d.Logger, now: d.Now,
		prepareSem:   make(chan struct{}, opts.PrepareConcurrency),
		summarizeSem: make(chan struct{}, opts.SummarizerConcurrency),
	}
	e.flight.wg = &e.bg // shared calls outliving their requests are drained on Close
	e.bgCtx, e.bgCancel = context.WithCancel(context.Background())
	e.flight.base = e.bgCtx
	e.promptHash = textHash(opts.Prompt)
	e.digestHash = textHash(fmt.Sprintf("%s\x00%d\x00%d", digestPrompt, opts.DigestInputBytes, opts.DigestMaxTokens))
	e.originals = d.Originals
	e.memory = d.Memory
	if e.originals == nil {
		e.originals = d.Cache
	}
	e.written = newRecentSet(opts.OriginalsTTL/4, 100000)
	e.prefixes = newPrefixLog(20000)
	return e
}

// cancelledDrain bounds how long Close waits, once it has cancelled the
// background work, for that work to return: every wait in it watches the
// engine's background context, so only CPU work (an extractive fold) or
// a summarizer that ignores its context keeps it longer.
const cancelledDrain = 5 * time.Second

// Close waits for background summarizations to finish or ctx to end.
// When ctx ends first, the background work is cancelled — its summarizer
// calls stop, and what they would have cached is not — and Close waits,
// at most cancelledDrain more, for it to return, so that none of it runs
// on the cache once Close has returned. The engine stays usable after
// Close (tests drain it between turns), but once the background work has
// been cancelled, later background work and shared summarizer calls are
// cancelled as they start.
func (e *Engine) Close(ctx context.Context) error {
	done := make(chan struct{})
	go func() { e.bg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
	}
	e.bgCancel()
	t := time.NewTimer(cancelledDrain)
	defer t.Stop()
	select {
	case <-done:
		return fmt.Errorf("draining background summaries: %w; the rest was cancelled", ctx.Err())
	case <-t.C:
		return fmt.Errorf("draining background summaries: %w; cancelled work still running %s later", ctx.Err(), cancelledDrain)
	}
}

// job is one request being condensed: one body the engine plans on — the
// request as received, or a digested copy of it (base) — and, shared with
// every job planning for the same request (reqState), what the request is and
// what it has spent and decided.
type job struct {
	*reqState
	in       *view.Request // the request as scanned
	conv     *conversation // in, parsed (condensing only)
	overhead int           // tokens outside the items
	changes  []Change
	degraded []degradation // why summaries fell back, in order
	// shrunk: the newest steps' outputs were digested already (the
	// window does not try again).
	shrunk bool
	// grid holds the received request's step tokens: stride grids are
	// laid on them, so they stay put when digests change the counts.
	grid []int
	// orig is the received request's conversation when conv is a
	// digested copy of it (item for item).
	orig *conversation
	// base, when set, is the job rq plans for on a digested copy of its
	// request: rq.in is a scan of ApplyPatches(base.in.Body, patches),
	// item for item. What rq forwards is not written from that copy but
	// from the request as received (the last base), in one pass: the
	// patches of the items its edit keeps composed with the edit
	// (spliced, digestsOnly).
	base    *job
	patches []view.Patch
	// digestBody and digestPatches are the body e.digest made last of
	// rq.in and its patches.
	digestBody    []byte
	digestPatches []view.Patch
	// counted is the last condensed body counted: the strategies count
	// their result to check it, and Condense reuses that count.
	counted tally
	// cutSummarized: the window's cut got summaries of what it omits in
	// place of its marker.
	cutSummarized bool
	// frontier is the step selective condensing's digest frontier stands
	// at (protectFrom), -1 before it ran.
	frontier int
	// eager: digests made under the threshold (selective.eager).
	eager bool
	// inplace, when set, is where this job's level-1 summaries may be
	// asked in place (inplace.go).
	inplace *inPlace
}

// reqState is what the jobs of one request share (job): the request, its
// model and limits, its deadline, the conversation's frozen decisions and
// record, what its summaries cost, and how they are made. A dry run or a
// background job has one of its own.
type reqState struct {
	req    Request
	codec  view.Codec
	model  string
	limits ModelLimits
	// stop closes when the request's max_wait is over (nil: never, for
	// background work).
	stop <-chan struct{}
	// over: the request as received is over the threshold.
	over bool
	// cold: over the threshold after an idle gap past the model's cache
	// lifetime (cold.go): the conversation's edits move as far as they
	// go, the cut and the fold to the target.
	cold bool
	// headHash is the conversation head's hash (stateKey), once made.
	headHash string
	// decisions holds the conversation's frozen decisions read or made
	// by this request (memo.go).
	decisions map[string]int
	// record is the conversation's record as read (memo.go).
	record *convRecord
	// The summaries' cache hits and misses, and the summarizer calls made.
	hits, misses, calls int
	// asks: the summaries a counting run stood in for that the real run
	// would ask the summarizer for (what a dry run's plan must pay).
	asks int
	// spent is what the summarizer calls cost, estimated in units of the
	// input price.
	spent float64
	// noCalls, when set, says why this request makes no summarizer call
	// (its plan needs more than max_summarizer_calls).
	noCalls string
	// summarizeCut: the window's cut gets summaries of what it omits in
	// place of its marker (auto).
	summarizeCut bool
	// extractiveSummaries: new summaries are extractive (auto past its
	// LLM allowance), kept under the extractive key.
	extractiveSummaries bool
	// notes: auto's cut leaves notes of what it omits, not summaries
	// (condense.stand_ins notes).
	notes bool
}

// received is the conversation as received (conv unless conv is a
// digested copy).
func (rq *job) received() *conversation {
	if rq.orig != nil {
		return rq.orig
	}
	return rq.conv
}

// windowed reports whether the conversation has a remembered window cut.
func (e *Engine) windowed(ctx context.Context, rq *job) bool {
	_, ok := e.field(ctx, rq, rq.cutKey(false))
	return ok
}

// gridTokens returns the received request's step tokens, on which stride
// grids are laid.
func (rq *job) gridTokens() []int {
	if rq.grid == nil {
		rq.grid = make([]int, len(rq.conv.steps))
		for i, s := range rq.conv.steps {
			rq.grid[i] = s.tokens
		}
	}
	return rq.grid
}

// waitOver reports whether the request's max_wait is over.
func (rq *job) waitOver() bool {
	select {
	case <-rq.stop:
		return true
	default:
		return false
	}
}

// countOut returns the count of a condensed body: the request derived
// from the edit that made it (derive), or, for a body no edit of this job
// made, a scan of it, once per job: asked again for the same slice, it
// returns the request it already has.
func (e *Engine) countOut(rq *job, out []byte) (*view.Request, error) {
	if c := rq.counted.body; len(out) > 0 && len(out) == len(c) && &out[0] == &c[0] {
		return rq.counted.req, nil
	}
	enc := rq.limits.Encoding
	vr, err := rq.codec.Scan(out, func(string) string { return enc })
	if err != nil {
		return nil, err
	}
	rq.counted = tally{body: out, req: vr}
	return vr, nil
}

// verifyDerived, when set (VerifyDerived), is handed each request derive
// derives, with its codec and body.
var verifyDerived atomic.Pointer[func(view.Codec, *view.Request, []byte)]

// VerifyDerived hands verify every request an Engine derives from an
// edit, with its codec and body, before the engine uses it; nil turns it
// off. For tests: internal/derivecheck.Record compares each with a scan
// of the same body. verify must not change the request.
func VerifyDerived(report func(c view.Codec, derived *view.Request, out []byte)) {
	if report == nil {
		verifyDerived.Store(nil)
		return
	}
	verifyDerived.Store(&report)
}

// tally is a condensed body counted: its scan and, when an edit of a
// parsed request made it, its items' roles (editRoles), so that the
// shapes a report shows need no parse of it.
type tally struct {
	body  []byte
	req   *view.Request
	roles []string
}

// editRoles returns the roles of the items of in edited by e: the kept
// ones keep theirs, the inserted ones are RoleStandIn; nil when in is
// not parsed.
func editRoles(in *view.Request, e view.Edit) []string {
	if !in.Parsed || e.From > e.To || e.To > len(in.Items) {
		return nil
	}
	roles := make([]string, 0, len(in.Items)-(e.To-e.From)+len(e.Insert))
	for _, it := range in.Items[:e.From] {
		roles = append(roles, it.Role)
	}
	for range e.Insert {
		roles = append(roles, RoleStandIn)
	}
	for _, it := range in.Items[e.To:] {
		roles = append(roles, it.Role)
	}
	return roles
}

// derive makes out, which e made of rq.in, the job's counted body: its
// request derived by the codec (view.Deriver) from the edit's layout
// (made by layout), the items carried over keeping their counts, so that
// countOut does not scan it again. A codec that cannot derive it leaves
// countOut to scan it.
func derive(rq *job, out []byte, e view.Edit, layout func() (view.Layout, error)) {
	d, ok := rq.codec.(view.Deriver)
	if !ok || len(out) == 0 {
		return
	}
	l, err := layout()
	if err != nil {
		return
	}
	vr, err := d.Derive(rq.in, out, l)
	if err != nil {
		return
	}
	if report := verifyDerived.Load(); report != nil {
		(*report)(rq.codec, vr, out)
	}
	rq.counted = tally{body: out, req: vr, roles: editRoles(rq.in, e)}
}

// parsePatched parses vr, the count of body — patches applied to
// rq.in.Body —, from rq.in's parse (view.ParsePatched): only the patched
// items are read again. When it cannot, vr stays unparsed and e.parse
// reads it whole.
func parsePatched(rq *job, vr *view.Request, patches []view.Patch, body []byte) {
	if vr.Parsed || view.ParsePatched(rq.in, vr, patches, rq.codec.Parse) != nil {
		return
	}
	if report := verifyDerived.Load(); report != nil {
		(*report)(rq.codec, vr, body)
	}
}

// spliced returns rq.in with e applied to its items (Codec.Splice), its
// count derived from the edit. When rq plans on a digested copy (rq.base),
// the edit is mapped onto the request as received — the same items
// replaced, the digests of the items kept as patches — and written from
// it by one Splice: no body is spliced from a digested copy.
func spliced(rq *job, e view.Edit) ([]byte, error) {
	top, e, err := onReceived(rq, e)
	if err != nil {
		return nil, err
	}
	if a, ok := top.codec.(view.Aligner); ok {
		e = a.Align(top.in, e)
	}
	out, err := top.codec.Splice(top.in, e)
	if err != nil {
		return nil, err
	}
	derive(top, out, e, func() (view.Layout, error) {
		if top.in.Array[1] == 0 {
			return view.Layout{}, fmt.Errorf("%w: no conversation array", view.ErrNotDerivable)
		}
		return view.SpliceLayout(top.in, top.in.Array, e)
	})
	counted(rq, top, top.counted)
	return out, nil
}

// onReceived returns e, an edit of rq.in, as an edit of the request as
// received: the job at the end of rq's bases, and the edit of its
// request, each base's patches composed with it (view.Compose).
func onReceived(rq *job, e view.Edit) (*job, view.Edit, error) {
	for ; rq.base != nil; rq = rq.base {
		var err error
		if e, err = view.Compose(rq.base.in, rq.patches, rq.in, e); err != nil {
			return nil, view.Edit{}, fmt.Errorf("composing the digests with the edit: %w", err)
		}
	}
	return rq, e, nil
}

// counted makes c the counted body of rq and of its bases up to top (top
// included).
func counted(rq, top *job, c tally) {
	for j := rq; j != nil; j = j.base {
		j.counted = c
		if j == top {
			return
		}
	}
}

// digestsOnly returns rq.in.Body — the digests of rq and of its bases,
// no item replaced — written from the request as received in one pass,
// its count derived from the patches.
func digestsOnly(rq *job) ([]byte, error) {
	if rq.base == nil {
		return rq.in.Body, nil
	}
	if rq.base.base == nil {
		// rq.in.Body is that pass (e.digest's ApplyPatches of the
		// request as received), rq.in its count.
		counted(rq, rq.base, tally{body: rq.in.Body, req: rq.in})
		return rq.in.Body, nil
	}
	top, e, err := onReceived(rq, view.Edit{})
	if err != nil {
		return nil, err
	}
	out := view.ApplyPatches(top.in.Body, e.Patches)
	derive(top, out, e, func() (view.Layout, error) { return view.PatchLayout(top.in, e.Patches) })
	counted(rq, top, top.counted)
	return out, nil
}

// digestRequest asks package selective about rq's messages msgs (its tool
// outputs), within the caller's scope, keeping the originals of the
// digests it makes (keepOriginal); a counting request makes no new cache
// entry (CacheOnly).
func (e *Engine) digestRequest(ctx context.Context, rq *job, msgs []selective.Message) selective.Request {
	return selective.Request{Body: rq.in.Body, Messages: msgs, Codec: selectiveCodec(rq), Encoding: rq.limits.Encoding,
		Scope: rq.req.Scope, CacheOnly: rq.req.CountOnly,
		Keep: func(id string, original func() []byte) { e.keepOriginal(ctx, rq, id, original) }}
}

// addDigestChanges records the digests made among the job's changes.
func (rq *job) addDigestChanges(made []selective.Made) {
	for _, d := range made {
		rq.changes = append(rq.changes, Change{Kind: ChangeDigest, ID: d.ID, From: d.Item, To: d.Item + 1, Tool: d.Tool,
			TokensBefore: d.Before, TokensAfter: d.After, Text: d.Text})
	}
}

// digest applies package selective to rq.in (sr.Body is rq.in.Body): the
// patched body's count is derived from its patches, and the body and its
// patches are kept (rq.digestBody) for the window that may follow.
func (e *Engine) digest(ctx context.Context, rq *job, sr selective.Request) (selective.Result, error) {
	res, err := e.sel.Apply(ctx, sr)
	if err != nil || len(res.Patches) == 0 {
		return res, err
	}
	rq.digestBody, rq.digestPatches = res.Body, res.Patches
	derive(rq, res.Body, view.Edit{Patches: res.Patches}, func() (view.Layout, error) { return view.PatchLayout(rq.in, res.Patches) })
	return res, nil
}
