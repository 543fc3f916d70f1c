// Package keepalive keeps a provider's prompt cache warm across an
// agent's idle gaps.
//
// Provider prompt caches expire when idle (Anthropic's after 5 minutes):
// an agent that ends its turn and waits for its user lets the cache lapse,
// and its next request writes the whole prefix again (1.25× the input
// price) instead of reading it (0.1×). A Keeper re-sends the last request
// of such a conversation shortly before its cache would expire — the
// exact bytes forwarded, with only the answer's bound at the API's
// minimum and streaming off (the request's codec writes it: view.Pinger),
// on the same path with the same headers — so the provider reads (and so
// refreshes) the cache for the price of a read.
//
// The flow: the proxy calls Forwarded for every request a condensing
// route forwards (the caller's scope, the conversation, its codec, the
// body, the headers) and feeds the returned Watch with the answer as it
// flows to the client, read by the codec (view.Meter). When the answer
// ends the agent's turn (view.Outcome.EndTurn), the
// conversation's prompt is large enough (MinPrefixTokens) and a ping
// costs less than the re-write it saves, a ping is scheduled at the
// model's cache TTL less a lead after the request. A ping that reads the
// cache schedules the next one while the gap's pings cost less than
// letting the cache expire would add to the next turn (pingsWorth: the
// engine's cold turn may condense that turn deep), up to MaxPings per
// gap; the next real
// request of the conversation stops them, and so does a ping whose usage
// shows a cache write (the cache was gone: that conversation is not
// pinged again).
//
// Several replicas: Forwarded writes a fresh owner token for the
// conversation to Store (Redis); a replica pings only while the token is
// still the one it wrote, so only the replica that served a
// conversation's last request pings it, and Locker keeps two replicas
// from pinging one conversation at once. Credentials are kept in this
// process's memory only, with the conversation, and never written to
// Store or logged.
//
// Memory is bounded: MaxConversations conversations (the least recently
// active dropped) and MaxBytes of kept bodies. Close stops the schedule
// and drains the pings in flight.
package keepalive

import (
	"container/list"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"github.com/condense-proxy/condense-proxy/view"
)

// Store keeps the conversations' owner tokens shared by replicas: a
// cache.Redis. A miss (Redis down, or nothing written) lets the replica
// ping what it holds.
type Store interface {
	Get(ctx context.Context, key string) ([]byte, bool)
	Set(ctx context.Context, key string, value []byte, ttl time.Duration)
}

// Locker takes a lock shared by replicas (cache.Redis's Lock: true when
// Redis is down, so work goes on uncoordinated).
type Locker interface {
	Lock(ctx context.Context, key string, ttl time.Duration) (release func(), ok bool)
}

// Model is what a Keeper needs to know of a model: its prompt cache's
// lifetime and prices (config's registry).
type Model struct {
	// CacheTTL is how long the provider keeps an idle cache. 0: the
	// model is not pinged.
	CacheTTL time.Duration
	// CacheRead and CacheWrite are the prices of a cached token read and
	// written, as fractions of the input price.
	CacheRead, CacheWrite float64
	// OutputPrice is the price of an output token as a multiple of the
	// input price; 0: 5 (Claude's).
	OutputPrice float64
	// Reasoning: a chat request's output limit is max_completion_tokens.
	Reasoning bool
	// ColdAbove and ColdTo describe the condensing engine's cold turns
	// (condense.cold_turns): a request of more than ColdAbove tokens as
	// received that comes after its cache expired is condensed to about
	// ColdTo tokens. 0: the engine does not condense cold turns.
	ColdAbove, ColdTo int
}

// Options configures a Keeper. Upstream and Model are required.
type Options struct {
	// Upstream is the base URL pings go to; a request's path is appended,
	// as the proxy does.
	Upstream *url.URL
	// Transport sends the pings. Nil: http.DefaultTransport.
	Transport http.RoundTripper
	// Model describes a model by name.
	Model func(model string) Model
	// Match selects the models pinged. Nil: every model.
	Match func(model string) bool
	// MaxPings bounds the pings per idle gap. Default 2.
	MaxPings int
	// MinPrefixTokens is the smallest request (tokens forwarded) pinged.
	// Default 0: any.
	MinPrefixTokens int
	// MaxConversations bounds the conversations tracked. Default 10000.
	MaxConversations int
	// MaxBytes bounds the request bodies kept for pings. Default 256 MiB.
	MaxBytes int64
	// Store and Locker coordinate replicas; nil: this process alone.
	Store  Store
	Locker Locker
	// Clock schedules the pings. Nil: the wall clock.
	Clock Clock
	// Timeout bounds one ping. Default 60s.
	Timeout time.Duration
	// Logger receives one line per ping. Nil: slog.Default().
	Logger *slog.Logger
	// Warmed, if set, is told of every ping that read the cache (the
	// conversation's scope and id, and when the ping was sent): the
	// condensing engine's Warmed, so a conversation kept warm by pings
	// is not taken for one whose cache expired (condense's cold turns).
	// Called on the ping's goroutine, without the Keeper's lock.
	Warmed func(ctx context.Context, scope, conversation string, at time.Time)
}

// Codec is what a Keeper needs of a request's codec: it reads the
// answers (view.Meter) and writes the pings (view.Pinger).
type Codec interface {
	view.Meter
	view.Pinger
}

// Request is a request a condensing route forwarded.
type Request struct {
	Scope        string // the caller's scope, never its credentials
	Conversation string // the engine's conversation id within the scope
	// Codec is the codec of the request's format. One that is not a
	// Codec (it cannot read answers or write pings): not pinged.
	Codec    view.Codec
	Model    string
	Path     string // the request's path ("/v1/messages")
	RawQuery string // its query, without "?" ("beta=true")
	// Header is the forwarded request's headers, credentials included;
	// kept in memory only. The Keeper owns it from now on.
	Header http.Header
	// Body is the forwarded body. The caller must not change it.
	Body []byte
	// Tokens is the forwarded request's size, as the proxy counted it;
	// Received the request's as received (0: Tokens).
	Tokens, Received int
}

// Stats are a Keeper's counts since it was made.
type Stats struct {
	// Answers is how many answers were watched to their end.
	Answers uint64
	// Tracked is the conversations held; Armed those with a ping
	// scheduled.
	Tracked, Armed int
	// Pings were sent and answered; PingWrites of them showed a cache
	// write (their conversations are not pinged again); PingErrors failed.
	Pings, PingWrites, PingErrors uint64
	// Yielded is the pings left to another replica, which served a later
	// request of the conversation or was pinging it.
	Yielded uint64
	// CacheRead is the cache-read tokens the pings bought.
	CacheRead uint64
	// PingCost is what the pings cost, in input tokens (cache reads and
	// writes at their prices, output at the model's output price).
	PingCost float64
	// Avoided is the re-writes the pings avoided, in input tokens: for a
	// conversation that came back after its cache would have expired and
	// read it, the tokens read × (write price − read price).
	Avoided float64
}

// NetSaving is the estimated saving: the re-writes avoided less the pings'
// cost, in input tokens (negative: the pings cost more than they saved).
func (s Stats) NetSaving() float64 { return s.Avoided - s.PingCost }

// Keeper schedules and sends the pings. Safe for concurrent use.
type Keeper struct {
	o      Options
	log    *slog.Logger
	ctx    context.Context // the pings'; cancelled by Close
	cancel context.CancelFunc
	wg     sync.WaitGroup // pings being sent

	mu     sync.Mutex
	convs  map[string]*list.Element // of *conv
	lru    *list.List               // most recently active first
	bytes  int64
	armed  int
	closed bool

	answers, pings, pingWrites, pingErrors, yielded, cacheRead atomic.Uint64
	costMu                                                     sync.Mutex
	pingCost, avoided                                          float64
}

// conv is one conversation's state, guarded by Keeper.mu.
type conv struct {
	key   string // scope \x00 conversation
	scope string
	id    string // the conversation
	owner string // its Store and Locker key (a hash)
	gen   uint64 // bumped by every request: older answers and timers are stale
	model Model

	// The last request, kept from Forwarded until its answer says
	// whether to ping it.
	codec          Codec
	path, rawQuery string
	header         http.Header
	body           []byte
	tokens         int
	token          string // the owner token written for it

	// The last two requests' sizes as received: how the next one grows.
	received, grew int

	ping   []byte // the ping's body, while armed
	timer  Timer
	pings  int       // pings sent in this gap
	budget int       // pings this gap may take (pingsWorth, at most MaxPings)
	used   time.Time // when the cache was last used (request or ping sent)

	lost bool // a ping wrote the cache: never pinged again

	// For the saving: when the previous real request was sent and how
	// many tokens this gap's last ping read.
	lastReal time.Time
	pingRead int
	credit   int // tokens the current request may read thanks to pings
}

func (c *conv) held() int64 { return int64(len(c.body) + len(c.ping)) }

// New returns a Keeper.
func New(o Options) (*Keeper, error) {
	if o.Upstream == nil {
		return nil, errors.New("keepalive: no upstream")
	}
	if o.Model == nil {
		return nil, errors.New("keepalive: no model lookup")
	}
	if o.Transport == nil {
		o.Transport = http.DefaultTransport
	}
	if o.MaxPings <= 0 {
		o.MaxPings = 2
	}
	if o.MaxConversations <= 0 {
		o.MaxConversations = 10000
	}
	if o.MaxBytes <= 0 {
		o.MaxBytes = 256 << 20
	}
	if o.Clock == nil {
		o.Clock = realClock{}
	}
	if o.Timeout <= 0 {
		o.Timeout = time.Minute
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Keeper{o: o, log: o.Logger, ctx: ctx, cancel: cancel, convs: map[string]*list.Element{}, lru: list.New()}, nil
}

// lead is how long before the cache would expire a ping is sent: a tenth
// of the lifetime, at most 30 seconds.
func lead(ttl time.Duration) time.Duration { return min(ttl/10, 30*time.Second) }

// ownerTTL is how long an owner token lives in the Store: the whole
// schedule of one gap, and a minute.
func (k *Keeper) ownerTTL(ttl time.Duration) time.Duration {
	return ttl*time.Duration(k.o.MaxPings+1) + time.Minute
}

// Forwarded tells the Keeper of a request about to be forwarded. It stops
// the pings of the request's conversation, and returns the Watch to feed
// with the answer, or nil when the request is not one to ping after.
// Called on the request's goroutine: with a Store, it writes the owner
// token there (bounded by a second, under ctx).
func (k *Keeper) Forwarded(ctx context.Context, r Request) *Watch {
	if r.Conversation == "" {
		return nil
	}
	key := r.Scope + "\x00" + r.Conversation
	var m Model
	codec, eligible := r.Codec.(Codec)
	eligible = eligible && r.Tokens >= k.o.MinPrefixTokens && (k.o.Match == nil || k.o.Match(r.Model))
	if eligible {
		m = k.o.Model(r.Model)
		eligible = m.CacheTTL > 0
	}
	now := k.o.Clock.Now()

	k.mu.Lock()
	if k.closed {
		k.mu.Unlock()
		return nil
	}
	el := k.convs[key]
	if el == nil && !eligible {
		k.mu.Unlock()
		return nil
	}
	var c *conv
	if el == nil {
		h := sha256.Sum256([]byte(key))
		c = &conv{key: key, scope: r.Scope, id: r.Conversation, owner: "keepalive:" + hex.EncodeToString(h[:16])}
		k.convs[key] = k.lru.PushFront(c)
	} else {
		c = el.Value.(*conv)
		k.lru.MoveToFront(el)
	}
	// The user is back: whatever this gap's pings bought is read now.
	c.credit = 0
	if c.pings > 0 && c.pingRead > 0 && now.Sub(c.lastReal) > c.model.CacheTTL {
		c.credit = c.pingRead
	}
	k.disarm(c)
	c.gen++
	c.pings, c.pingRead = 0, 0
	k.bytes -= c.held()
	c.body, c.header = nil, nil
	if !eligible || c.lost {
		if !c.lost && c.credit == 0 {
			k.remove(c)
		}
		gen := c.gen
		credit := c.credit > 0
		k.mu.Unlock()
		if credit {
			// Only to credit the saving: no ping after it.
			meter, _ := r.Codec.(view.Meter)
			return &Watch{k: k, c: c, gen: gen, meter: meter, creditOnly: true}
		}
		return nil
	}
	received := r.Received
	if received <= 0 {
		received = r.Tokens
	}
	c.grew = 0
	if c.received > 0 && received > c.received {
		c.grew = received - c.received
	}
	c.received = received
	var tb [16]byte
	rand.Read(tb[:])
	c.model = m
	c.codec, c.path, c.rawQuery, c.header, c.body, c.tokens = codec, r.Path, r.RawQuery, r.Header, r.Body, r.Tokens
	c.token = hex.EncodeToString(tb[:])
	c.used, c.lastReal = now, now
	k.bytes += c.held()
	k.trim(c)
	gen, token, owner := c.gen, c.token, c.owner
	k.mu.Unlock()

	if k.o.Store != nil {
		// Not cancelled with the request: a replica that did not learn of
		// this one would ping over it.
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
		k.o.Store.Set(sctx, owner, []byte(token), k.ownerTTL(m.CacheTTL))
		cancel()
	}
	return &Watch{k: k, c: c, gen: gen, meter: codec}
}

// disarm stops c's scheduled ping. k.mu is held.
func (k *Keeper) disarm(c *conv) {
	if c.timer != nil {
		c.timer.Stop()
		c.timer = nil
	}
	if c.ping != nil {
		k.bytes -= int64(len(c.ping))
		c.ping = nil
		k.armed--
	}
}

// remove forgets c. k.mu is held.
func (k *Keeper) remove(c *conv) {
	k.disarm(c)
	k.bytes -= c.held()
	c.body, c.header = nil, nil
	c.gen++ // its watch and timer, if any, are stale
	if el := k.convs[c.key]; el != nil {
		k.lru.Remove(el)
		delete(k.convs, c.key)
	}
}

// trim drops the least recently active conversations (never keep) while
// over the bounds. k.mu is held.
func (k *Keeper) trim(keep *conv) {
	for el := k.lru.Back(); el != nil && (len(k.convs) > k.o.MaxConversations || k.bytes > k.o.MaxBytes); {
		prev := el.Prev()
		if c := el.Value.(*conv); c != keep {
			k.remove(c)
		}
		el = prev
	}
}

// answered handles the end of a watched answer.
func (k *Keeper) answered(w *Watch, a view.Outcome, ok bool) {
	defer k.answers.Add(1)
	k.mu.Lock()
	defer k.mu.Unlock()
	c := w.c
	if c.gen != w.gen || k.closed {
		return
	}
	if c.credit > 0 {
		if ok && a.Usage.CacheRead > 0 {
			k.addAvoided(float64(min(a.Usage.CacheRead, c.credit)) * (c.model.CacheWrite - c.model.CacheRead))
		}
		c.credit = 0
	}
	if w.creditOnly {
		return
	}
	body, header := c.body, c.header
	k.bytes -= c.held()
	c.body, c.header = nil, nil
	if !ok || !a.EndTurn {
		return
	}
	prompt := c.tokens
	if a.Usage.Known && a.Usage.Prompt() > 0 {
		prompt = a.Usage.Prompt()
	}
	if prompt < k.o.MinPrefixTokens {
		return
	}
	ping, out, err := c.codec.Ping(body, c.model.Reasoning)
	if err != nil {
		k.log.Debug("keepalive: no ping", "conversation", c.owner, "err", err)
		return
	}
	c.budget = min(pingsWorth(c.model, prompt, c.received+c.grew, out), k.o.MaxPings)
	if c.budget == 0 {
		k.log.Debug("keepalive: not pinged: a ping would cost more than letting the cache expire adds to the next turn", "conversation", c.owner,
			"prompt_tokens", prompt, "ping_output_tokens", out, "next_turn_condensed_cold", coldCondenses(c.model, c.received+c.grew))
		return
	}
	c.header, c.ping = header, ping
	k.bytes += c.held()
	k.armed++
	k.schedule(c)
	k.trim(c)
}

// schedule arms c's next ping: its cache TTL less the lead after it was
// last used. k.mu is held.
func (k *Keeper) schedule(c *conv) {
	d := c.used.Add(c.model.CacheTTL - lead(c.model.CacheTTL)).Sub(k.o.Clock.Now())
	gen := c.gen
	c.timer = k.o.Clock.AfterFunc(max(d, 0), func() { k.fire(c, gen) })
}

// pending is what one ping needs, copied out of its conv.
type pending struct {
	codec          Codec
	path, rawQuery string
	header         http.Header
	body           []byte
	model          Model
}

// fire sends c's scheduled ping, if it is still due.
func (k *Keeper) fire(c *conv, gen uint64) {
	k.mu.Lock()
	if k.closed || c.gen != gen || c.ping == nil {
		k.mu.Unlock()
		return
	}
	c.timer = nil
	p := &pending{codec: c.codec, path: c.path, rawQuery: c.rawQuery, header: c.header, body: c.ping, model: c.model}
	token, owner, scope, id := c.token, c.owner, c.scope, c.id
	k.wg.Add(1)
	k.mu.Unlock()
	defer k.wg.Done()

	ctx, cancel := context.WithTimeout(k.ctx, k.o.Timeout)
	defer cancel()
	if k.o.Store != nil {
		if v, ok := k.o.Store.Get(ctx, owner); ok && string(v) != token {
			// Another replica served a later request: its pings now.
			k.yielded.Add(1)
			k.stop(c, gen)
			return
		}
	}
	if k.o.Locker != nil {
		release, ok := k.o.Locker.Lock(ctx, owner, k.o.Timeout+5*time.Second)
		if !ok {
			k.yielded.Add(1)
			k.stop(c, gen)
			return
		}
		defer release()
	}
	sent := k.o.Clock.Now()
	u, err := k.send(ctx, p)
	if err == nil && readMostly(u) && k.o.Warmed != nil {
		// The cache lives a TTL from this ping on: the engine must not
		// take the conversation's next request for a cold one.
		k.o.Warmed(ctx, scope, id, sent)
	}

	k.mu.Lock()
	defer k.mu.Unlock()
	if err != nil {
		k.pingErrors.Add(1)
		if k.ctx.Err() == nil {
			k.log.Warn("keepalive: ping failed; no more pings in this gap", "conversation", owner, "err", err)
		}
		k.stopLocked(c, gen)
		return
	}
	k.pings.Add(1)
	k.cacheRead.Add(uint64(u.CacheRead))
	k.addCost(cost(p.model, u))
	if !readMostly(u) {
		k.pingWrites.Add(1)
		k.log.Info("keepalive: the ping found the cache gone; the conversation is not pinged again", "conversation", owner,
			"cache_read", u.CacheRead, "cache_write", u.CacheWrite, "uncached", u.Uncached)
		if c.gen == gen {
			c.lost, c.pingRead = true, 0
		}
		k.stopLocked(c, gen)
		return
	}
	k.log.Debug("keepalive: ping", "conversation", owner, "cache_read", u.CacheRead)
	if c.gen != gen || k.closed {
		return // a real request came meanwhile
	}
	c.pings++
	c.used = sent
	c.pingRead = u.CacheRead
	if c.pings >= c.budget {
		if c.budget < k.o.MaxPings {
			k.log.Debug("keepalive: the cache is let go cold: more pings would cost more than the next turn's cold condensation adds", "conversation", owner,
				"pings", c.pings)
		}
		k.disarm(c)
		return
	}
	k.schedule(c)
}

// stop ends c's pings in this gap, unless a newer request superseded gen.
func (k *Keeper) stop(c *conv, gen uint64) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.stopLocked(c, gen)
}

func (k *Keeper) stopLocked(c *conv, gen uint64) {
	if c.gen == gen {
		k.disarm(c)
	}
}

func (k *Keeper) addCost(v float64) {
	k.costMu.Lock()
	k.pingCost += v
	k.costMu.Unlock()
}

func (k *Keeper) addAvoided(v float64) {
	k.costMu.Lock()
	k.avoided += v
	k.costMu.Unlock()
}

// Stats returns the counts.
func (k *Keeper) Stats() Stats {
	k.mu.Lock()
	s := Stats{Tracked: len(k.convs), Armed: k.armed}
	k.mu.Unlock()
	s.Answers, s.Pings, s.PingWrites, s.PingErrors = k.answers.Load(), k.pings.Load(), k.pingWrites.Load(), k.pingErrors.Load()
	s.Yielded, s.CacheRead = k.yielded.Load(), k.cacheRead.Load()
	k.costMu.Lock()
	s.PingCost, s.Avoided = k.pingCost, k.avoided
	k.costMu.Unlock()
	return s
}

// Close stops every scheduled ping and waits, until ctx ends, for those
// being sent; then cancels what is left.
func (k *Keeper) Close(ctx context.Context) error {
	k.mu.Lock()
	k.closed = true
	for _, el := range k.convs {
		k.disarm(el.Value.(*conv))
	}
	k.mu.Unlock()
	done := make(chan struct{})
	go func() { k.wg.Wait(); close(done) }()
	var err error
	select {
	case <-done:
	case <-ctx.Done():
		err = fmt.Errorf("keepalive: pings in flight cut short: %w", ctx.Err())
	}
	k.cancel()
	<-done
	return err
}

// Watch reads one answer as it flows to the client: Start with its status
// and headers, Write with its bytes, End once. Created per request; not
// safe for concurrent use.
type Watch struct {
	k          *Keeper
	c          *conv
	gen        uint64
	meter      view.Meter
	creditOnly bool
	r          view.AnswerReader
	ended      bool
}

// Start reports whether the answer's body is wanted: a 200 that is not
// compressed. false ends the watch.
func (w *Watch) Start(status int, h http.Header) bool {
	if enc := h.Get("Content-Encoding"); w.meter == nil || status != http.StatusOK || (enc != "" && enc != "identity") {
		w.End(false)
		return false
	}
	w.r = w.meter.AnswerReader(isSSE(h.Get("Content-Type")))
	return true
}

// Write takes the answer's next bytes (not kept).
func (w *Watch) Write(b []byte) {
	if w.r != nil && !w.ended {
		w.r.Write(b)
	}
}

// End ends the watch; complete: the body was read to its end. Only the
// first call counts.
func (w *Watch) End(complete bool) {
	if w.ended {
		return
	}
	w.ended = true
	if w.r == nil || !complete {
		w.k.answered(w, view.Outcome{}, false)
		return
	}
	w.k.answered(w, w.r.Outcome(), true)
}
