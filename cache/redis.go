package cache

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// Redis is a store on a Redis server or a Redis Cluster. Errors never
// reach the caller: a failed Get is a miss, a failed Set or Delete is
// dropped, and both are counted in Stats().Errors. A small circuit
// breaker: after FailThreshold consecutive failures the server is taken
// for down, and commands are not sent at all (so a dead server costs
// requests no time) except one probe per ProbeInterval; one slow command
// alone marks nothing. Each transition is logged once.
//
// Every operation touches one key, so on a cluster each lives in one
// slot; lock keys are their name's own key.
type Redis struct {
	client    redis.UniversalClient
	log       *slog.Logger
	down      atomic.Bool
	failures  atomic.Int32 // consecutive failures
	threshold int32
	// nextProbe (unix nanoseconds) is when, while down, the next command
	// may try the server; until then commands fail at once without waiting
	// on the network.
	nextProbe     atomic.Int64
	probeInterval time.Duration
	opts          RedisOptions // as given, defaults filled in
	counters
}

// skip reports whether a command should not be sent: the server is down
// and it is not yet time for one caller to probe it.
func (r *Redis) skip() bool {
	if !r.down.Load() {
		return false
	}
	now := time.Now().UnixNano()
	next := r.nextProbe.Load()
	if now < next {
		r.errors.Add(1)
		return true
	}
	// One caller wins the probe; the others keep skipping.
	if !r.nextProbe.CompareAndSwap(next, now+int64(r.probeInterval)) {
		r.errors.Add(1)
		return true
	}
	return false
}

// RedisOptions configures NewRedis. Zero durations pick the defaults.
type RedisOptions struct {
	// URL is a redis:// or rediss:// URL of one server.
	URL string
	// ClusterURL, when set instead, is a Redis Cluster in go-redis's form:
	// redis://host1:port1?addr=host2:port2&addr=host3:port3.
	ClusterURL string
	// FailThreshold is how many consecutive failed commands take the
	// server for down. Default 3.
	FailThreshold int
	// Timeout bounds each command (dial, read and write). Default 500ms.
	Timeout time.Duration
	// Logger receives the down/up state changes. Nil: slog.Default().
	Logger *slog.Logger
	// ProbeInterval is how often, while the server is down, one command is
	// let through to see whether it is back. Default 1s.
	ProbeInterval time.Duration
}

// quietRedisLog silences go-redis's own logger (one line per failed dial,
// many a second during an outage); Redis's state changes are logged by
// observe instead, once each way.
type quietRedisLog struct{}

func (quietRedisLog) Printf(context.Context, string, ...any) {}

var silenceRedis sync.Once

// NewRedis connects lazily to the server at o.URL; it fails only when the
// URL cannot be parsed. Use Ping to check reachability.
func NewRedis(o RedisOptions) (*Redis, error) {
	silenceRedis.Do(func() { redis.SetLogger(quietRedisLog{}) })
	if o.Timeout <= 0 {
		o.Timeout = 500 * time.Millisecond
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.ProbeInterval <= 0 {
		o.ProbeInterval = time.Second
	}
	if o.FailThreshold <= 0 {
		o.FailThreshold = 3
	}
	var client redis.UniversalClient
	if o.ClusterURL != "" {
		opt, err := redis.ParseClusterURL(o.ClusterURL)
		if err != nil {
			return nil, fmt.Errorf("parsing redis cluster URL: %w", err)
		}
		opt.DialTimeout, opt.ReadTimeout, opt.WriteTimeout = o.Timeout, o.Timeout, o.Timeout
		opt.MaxRetries = -1 // no retries: a miss is cheaper than waiting
		opt.ContextTimeoutEnabled = true
		client = redis.NewClusterClient(opt)
	} else {
		opt, err := redis.ParseURL(o.URL)
		if err != nil {
			return nil, fmt.Errorf("parsing redis URL: %w", err)
		}
		opt.DialTimeout, opt.ReadTimeout, opt.WriteTimeout = o.Timeout, o.Timeout, o.Timeout
		opt.MaxRetries = -1
		opt.ContextTimeoutEnabled = true
		client = redis.NewClient(opt)
	}
	return &Redis{client: client, log: o.Logger, probeInterval: o.ProbeInterval, threshold: int32(o.FailThreshold), opts: o}, nil
}

// Options returns the options the store runs with, defaults filled in.
func (r *Redis) Options() RedisOptions { return r.opts }

// Close closes the connection pool.
func (r *Redis) Close() error { return r.client.Close() }

// observe records the outcome of a command and logs changes of state.
func (r *Redis) observe(err error) {
	if err == nil || errors.Is(err, redis.Nil) {
		r.failures.Store(0)
		if r.down.CompareAndSwap(true, false) {
			r.log.Info("redis reachable again; cache restored")
		}
		return
	}
	if errors.Is(err, context.Canceled) {
		return // the caller left; says nothing about Redis
	}
	r.errors.Add(1)
	if r.down.Load() {
		// A failed probe: wait for the next one.
		r.nextProbe.Store(time.Now().UnixNano() + int64(r.probeInterval))
		return
	}
	if r.failures.Add(1) < r.threshold {
		return // one slow or failed command marks nothing
	}
	r.nextProbe.Store(time.Now().UnixNano() + int64(r.probeInterval))
	if r.down.CompareAndSwap(false, true) {
		r.log.Warn("redis unavailable; cache degraded to misses until it returns", "err", err, "consecutive_failures", r.failures.Load())
	}
}

// Add stores value under key unless the key holds a value already (SET
// NX), and returns the value the key holds afterwards: the first writer's,
// so every replica builds on the same text. ok is false when Redis could
// not answer (the caller keeps its own value).
func (r *Redis) Add(ctx context.Context, key string, value []byte, ttl time.Duration) (stored []byte, ok bool) {
	if ttl < 0 {
		ttl = 0
	}
	if r.skip() {
		return nil, false
	}
	set, err := r.client.SetNX(ctx, Prefix+key, value, ttl).Result()
	r.observe(err)
	if err != nil {
		return nil, false
	}
	if set {
		return value, true
	}
	v, err := r.client.Get(ctx, Prefix+key).Bytes()
	r.observe(err)
	if err != nil {
		return nil, false
	}
	return v, true
}

// Down reports whether the server is currently taken for down.
func (r *Redis) Down() bool { return r.down.Load() }

// Get returns the value under key, or a miss when absent or on error.
func (r *Redis) Get(ctx context.Context, key string) ([]byte, bool) {
	if r.skip() {
		r.record(false)
		return nil, false
	}
	v, err := r.client.Get(ctx, Prefix+key).Bytes()
	r.observe(err)
	ok := err == nil
	r.record(ok)
	return v, ok
}

// Set stores value with ttl (<= 0: no expiry).
func (r *Redis) Set(ctx context.Context, key string, value []byte, ttl time.Duration) {
	if ttl < 0 {
		ttl = 0
	}
	if r.skip() {
		return
	}
	r.observe(r.client.Set(ctx, Prefix+key, value, ttl).Err())
}

// Delete removes key.
func (r *Redis) Delete(ctx context.Context, key string) {
	if r.skip() {
		return
	}
	r.observe(r.client.Del(ctx, Prefix+key).Err())
}

// Lock takes the lock named key (SET NX with a random owner token and a
// lease of ttl). It reports false when another holder has it; when Redis
// is down it reports true, so work goes on without coordination. While
// held, the lease is renewed every ttl/3 (only while the token is still
// ours), so a long call keeps its lock and a holder that dies frees it
// within one lease. release stops the renewal and frees the lock if it is
// still ours.
func (r *Redis) Lock(ctx context.Context, key string, ttl time.Duration) (release func(), ok bool) {
	if r.skip() {
		return func() {}, true
	}
	var tb [16]byte
	rand.Read(tb[:])
	token := hex.EncodeToString(tb[:])
	name := Prefix + "lock:" + key
	got, err := r.client.SetNX(ctx, name, token, ttl).Result()
	r.observe(err)
	if err != nil {
		return func() {}, true
	}
	if !got {
		return func() {}, false
	}
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(max(ttl/3, 10*time.Millisecond))
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				cctx, cancel := context.WithTimeout(context.Background(), ttl/3+time.Second)
				n, err := renewScript.Run(cctx, r.client, []string{name}, token, ttl.Milliseconds()).Int()
				cancel()
				r.observe(err)
				if err == nil && n == 0 {
					return // lost: another holder took it after a lapse
				}
			}
		}
	}()
	var once sync.Once
	return func() {
		once.Do(func() {
			close(stop)
			<-done
			ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
			defer cancel()
			r.observe(releaseScript.Run(ctx, r.client, []string{name}, token).Err())
		})
	}, true
}

// The lock's scripts compare the owner token first (a lease that lapsed
// and was taken by another holder is not touched).
var (
	renewScript   = redis.NewScript(`if redis.call("GET", KEYS[1]) == ARGV[1] then return redis.call("PEXPIRE", KEYS[1], ARGV[2]) end return 0`)
	releaseScript = redis.NewScript(`if redis.call("GET", KEYS[1]) == ARGV[1] then return redis.call("DEL", KEYS[1]) end return 0`)
)

// Ping checks that the server answers. It always asks the server, so it
// also serves as the recovery probe.
func (r *Redis) Ping(ctx context.Context) error {
	err := r.client.Ping(ctx).Err()
	r.observe(err)
	if err != nil {
		return fmt.Errorf("pinging redis: %w", err)
	}
	return nil
}

// Stats returns counts and whether the server is currently unreachable.
func (r *Redis) Stats() Stats {
	s := r.counters.stats()
	s.Degraded = r.down.Load()
	return s
}

// swapScript sets KEYS[1] to ARGV[3] (for ARGV[4] milliseconds; 0: no
// expiry) when it holds ARGV[2] — or, with ARGV[1] "1", when it is
// absent — and answers {1}; otherwise {0, what it holds} ({0} when
// absent).
var swapScript = redis.NewScript(`
local cur = redis.call('GET', KEYS[1])
if (ARGV[1] == '1' and not cur) or (ARGV[1] == '0' and cur == ARGV[2]) then
  if tonumber(ARGV[4]) > 0 then
    redis.call('SET', KEYS[1], ARGV[3], 'PX', ARGV[4])
  else
    redis.call('SET', KEYS[1], ARGV[3])
  end
  return {1}
end
if cur then return {0, cur} end
return {0}
`)

// Swap sets key to value when it holds old (nil: when it is absent), in
// one step on the server, so that of replicas racing to change a record
// exactly one wins; otherwise it returns what the key holds (nil when
// absent). err is set when Redis could not be asked (down, or failing).
func (r *Redis) Swap(ctx context.Context, key string, old, value []byte, ttl time.Duration) (current []byte, swapped bool, err error) {
	if r.skip() {
		return nil, false, errors.New("redis is down")
	}
	absent := "0"
	if old == nil {
		absent = "1"
	}
	res, err := swapScript.Run(ctx, r.client, []string{Prefix + key}, absent, old, value, max(ttl, 0).Milliseconds()).Slice()
	r.observe(err)
	if err != nil {
		return nil, false, fmt.Errorf("swapping %s: %w", key, err)
	}
	if len(res) == 0 {
		return nil, false, fmt.Errorf("swapping %s: empty answer", key)
	}
	if n, _ := res[0].(int64); n == 1 {
		return value, true, nil
	}
	if len(res) > 1 {
		if s, ok := res[1].(string); ok {
			return []byte(s), false, nil
		}
	}
	return nil, false, nil
}
