package cache

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// Redis is a store on a Redis server. Errors never reach the caller: a
// failed Get is a miss, a failed Set or Delete is dropped, and both are
// counted in Stats().Errors. While the server is unreachable, commands are
// not sent at all (so a dead server costs requests no time) except one
// probe per ProbeInterval.
type Redis struct {
	client *redis.Client
	log    *slog.Logger
	down   atomic.Bool
	// nextProbe (unix nanoseconds) is when, while down, the next command
	// may try the server; until then commands fail at once without waiting
	// on the network.
	nextProbe     atomic.Int64
	probeInterval time.Duration
	counters
}

// errDown is what commands skipped while the server is down report.
var errDown = errors.New("redis down; skipped until the next probe")

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
	// URL is a redis:// or rediss:// URL.
	URL string
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
	opt, err := redis.ParseURL(o.URL)
	if err != nil {
		return nil, fmt.Errorf("parsing redis URL: %w", err)
	}
	if o.Timeout <= 0 {
		o.Timeout = 500 * time.Millisecond
	}
	opt.DialTimeout = o.Timeout
	opt.ReadTimeout = o.Timeout
	opt.WriteTimeout = o.Timeout
	opt.MaxRetries = -1 // no retries: a miss is cheaper than waiting
	opt.ContextTimeoutEnabled = true
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.ProbeInterval <= 0 {
		o.ProbeInterval = time.Second
	}
	return &Redis{client: redis.NewClient(opt), log: o.Logger, probeInterval: o.ProbeInterval}, nil
}

// Close closes the connection pool.
func (r *Redis) Close() error { return r.client.Close() }

// observe records the outcome of a command and logs changes of state.
func (r *Redis) observe(err error) {
	if err == nil || errors.Is(err, redis.Nil) {
		if r.down.CompareAndSwap(true, false) {
			r.log.Info("redis reachable again; cache restored")
		}
		return
	}
	if errors.Is(err, context.Canceled) {
		return // the caller left; says nothing about Redis
	}
	r.errors.Add(1)
	r.nextProbe.Store(time.Now().UnixNano() + int64(r.probeInterval))
	if r.down.CompareAndSwap(false, true) {
		r.log.Warn("redis unavailable; cache degraded to misses until it returns", "err", err)
	}
}

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

// Lock takes a short lock named key (SET NX with ttl). It reports false
// when another holder has it; when Redis is down it reports true, so work
// goes on without coordination. release frees the lock if still held.
func (r *Redis) Lock(ctx context.Context, key string, ttl time.Duration) (release func(), ok bool) {
	if r.skip() {
		return func() {}, true
	}
	token := fmt.Sprintf("%d", time.Now().UnixNano())
	got, err := r.client.SetNX(ctx, Prefix+"lock:"+key, token, ttl).Result()
	r.observe(err)
	if err != nil {
		return func() {}, true
	}
	if !got {
		return func() {}, false
	}
	return func() {
		// Delete only our own token: compare-and-delete in one script.
		const script = `if redis.call("GET", KEYS[1]) == ARGV[1] then return redis.call("DEL", KEYS[1]) end return 0`
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
		defer cancel()
		r.observe(r.client.Eval(ctx, script, []string{Prefix + "lock:" + key}, token).Err())
	}, true
}

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
