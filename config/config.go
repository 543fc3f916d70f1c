// Package config loads condense-proxy's typed configuration.
//
// Values come, in rising priority, from built-in defaults, a YAML file
// (--config), environment variables (CONDENSE_<KEY>, dots and dashes in the
// key become underscores: condense.threshold is CONDENSE_CONDENSE_THRESHOLD)
// and command-line flags. Load returns a validated Config, or an error that
// lists every invalid setting at once.
//
// The package also holds the model registry (registry.go): context window,
// output limit, threshold and tokenizer encoding per model family.
package config

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/go-viper/mapstructure/v2"
	"github.com/spf13/pflag"
	"github.com/spf13/viper"

	"github.com/condense-proxy/condense-proxy/condense"
	"github.com/condense-proxy/condense-proxy/proxy"
)

// EnvPrefix is the prefix of every environment variable the proxy reads.
const EnvPrefix = "CONDENSE"

// Config is the whole configuration. Zero values are never used directly:
// Load fills every field from the defaults below first.
type Config struct {
	// Listen is the address the HTTP server binds. Default ":8080".
	Listen string `mapstructure:"listen"`
	// Upstream is the base URL requests are forwarded to; the request path is
	// appended to it. Default "https://api.openai.com".
	Upstream string `mapstructure:"upstream"`
	// RedisURL selects the Redis cache ("redis://host:port/db"). Empty: the
	// in-memory cache only. Default "".
	RedisURL string `mapstructure:"redis_url"`
	// RedisClusterURL selects a Redis Cluster instead, in go-redis's form
	// ("redis://host1:port1?addr=host2:port2&addr=host3:port3"). Default "".
	RedisClusterURL string `mapstructure:"redis_cluster_url"`
	// CacheMaxBytes bounds the in-memory cache (values plus keys). Default 256 MiB.
	CacheMaxBytes int64 `mapstructure:"cache_max_bytes"`
	// OriginalsMaxBytes bounds the in-memory store of condensed-away
	// originals, kept apart from the cache so large originals never push
	// summaries out. Used without Redis (with Redis the originals go to
	// the cache's store). Default 128 MiB.
	OriginalsMaxBytes int64 `mapstructure:"originals_max_bytes"`
	// MaxBodyBytes bounds a chat request body as received. Larger: 413.
	// Default 64 MiB.
	MaxBodyBytes int64 `mapstructure:"max_body_bytes"`
	// MaxDecompressedBytes bounds a compressed body once decoded. Larger: 413.
	// Default 128 MiB.
	MaxDecompressedBytes int64 `mapstructure:"max_decompressed_bytes"`
	// MaxInflightCondense caps the chat requests being read and condensed
	// at once; past it a request waits up to a second for a place, then is
	// forwarded unchanged with X-Condense-Degraded. 0: 4 × GOMAXPROCS.
	// Default 0.
	MaxInflightCondense int `mapstructure:"max_inflight_condense"`
	// MaxRequestMessages refuses (413) chat requests with more messages
	// than this, before any counting. 0: no limit. Default 100000.
	MaxRequestMessages int `mapstructure:"max_request_messages"`
	// DefaultContextWindow is the window assumed for models the registry does
	// not know. Default 128000.
	DefaultContextWindow int `mapstructure:"default_context_window"`
	// ShutdownGrace is how long in-flight requests (streams included) may run
	// after SIGTERM. Default 30s.
	ShutdownGrace time.Duration `mapstructure:"shutdown_grace"`
	// UpstreamConnectTimeout bounds dialing the upstream. Default 10s.
	UpstreamConnectTimeout time.Duration `mapstructure:"upstream_connect_timeout"`
	// UpstreamHeaderTimeout bounds the wait for upstream response headers;
	// 0 means no limit (reasoning models can think for minutes). Default 0.
	UpstreamHeaderTimeout time.Duration `mapstructure:"upstream_header_timeout"`
	// ScopeSecret keys the HMAC that maps a request's credentials to the
	// caller's scope (cache keys, originals, the live page). Empty: a
	// random secret is made at start (and a warning logged), so scopes
	// change on restart and differ between replicas. Default "".
	ScopeSecret string `mapstructure:"scope_secret"`
	// ScopeHeaders are the request headers whose values make the caller's
	// scope. Default Authorization, x-api-key, api-key, x-litellm-api-key,
	// x-goog-api-key (proxy.CredentialHeaders).
	ScopeHeaders []string `mapstructure:"scope_headers"`
	// LogLevel is debug, info, warn or error. Default "info".
	LogLevel string `mapstructure:"log_level"`
	// LogFormat is json, text or auto (text on a terminal). Default "auto".
	LogFormat string `mapstructure:"log_format"`

	Condense  Condense      `mapstructure:"condense"`
	Selective Selective     `mapstructure:"selective"`
	Auth      Auth          `mapstructure:"auth"`
	UI        UI            `mapstructure:"ui"`
	Models    []ModelConfig `mapstructure:"models"`
}

// Condense configures the condensing engine.
type Condense struct {
	// Mode is the default for requests without X-Condense-Mode, one of
	// condense.Modes. Default "auto".
	Mode string `mapstructure:"mode"`
	// Threshold is the fraction of the context window above which a request
	// is condensed, in (0,1]. Default 0.8.
	Threshold float64 `mapstructure:"threshold"`
	// Target is the fraction of the window condensing aims for; must be below
	// Threshold. Default 0.5.
	Target float64 `mapstructure:"target"`
	// PrepareThreshold starts background summarization ahead of time; 0 means
	// Threshold-0.1. Default 0.7.
	PrepareThreshold float64 `mapstructure:"prepare_threshold"`
	// KeepRecentTurns is the minimum number of recent steps kept verbatim.
	// Default 3.
	KeepRecentTurns int `mapstructure:"keep_recent_turns"`
	// ChunkTokens is the size of a level-1 summary chunk. Default 12000.
	ChunkTokens int `mapstructure:"chunk_tokens"`
	// SummaryBudgetTokens bounds the summaries kept at one level before they
	// are folded into the next. Default 8000.
	SummaryBudgetTokens int `mapstructure:"summary_budget_tokens"`
	// Summarizer is llm or extractive. Default "llm".
	Summarizer string `mapstructure:"summarizer"`
	// SummaryModel is the model the LLM summarizer calls; empty: the
	// request's own model. Default "".
	SummaryModel string `mapstructure:"summary_model"`
	// SummaryAPI is the API the LLM summarizer asks in: auto (the wire
	// format of the request being condensed: chat completions for chat,
	// /v1/responses for Responses), chat, messages or responses. Default
	// "auto".
	SummaryAPI string `mapstructure:"summary_api"`
	// SummaryTimeout bounds one summarizer call. Default 60s.
	SummaryTimeout time.Duration `mapstructure:"summary_timeout"`
	// MaxWait bounds how long one request waits for summaries before it
	// goes on with what is ready (extractive summaries, the window) and
	// says so in X-Condense-Degraded. Default 30s.
	MaxWait time.Duration `mapstructure:"max_wait"`
	// PromptFile replaces the built-in summary prompt. Default "".
	PromptFile string `mapstructure:"prompt_file"`
	// MaxMessages condenses requests with more messages than this; 0 means no
	// message-count trigger. Default 0.
	MaxMessages int `mapstructure:"max_messages"`
	// OriginalsTTL is how long condensed-away messages stay retrievable.
	// Default 24h.
	OriginalsTTL time.Duration `mapstructure:"originals_ttl"`
}

// Selective configures selective condensing of old tool outputs.
type Selective struct {
	// Enabled is the feature flag. Default true.
	Enabled bool `mapstructure:"enabled"`
	// KeepRecentToolOutputs protects the newest tool outputs. Default 5.
	KeepRecentToolOutputs int `mapstructure:"keep_recent_tool_outputs"`
	// MinToolOutputTokens is the smallest output that is digested. Default 500.
	MinToolOutputTokens int `mapstructure:"min_tool_output_tokens"`
	// ExcludeTools are tool names whose outputs are never digested.
	ExcludeTools []string `mapstructure:"exclude_tools"`
	// ClearToolInputs also shortens very large tool-call arguments. Default false.
	ClearToolInputs bool `mapstructure:"clear_tool_inputs"`
	// MinSavingsTokens is the least selective condensing frees once it
	// starts, so it does not churn a little every turn; 0: 10% of the
	// model's window. Default 0.
	MinSavingsTokens int `mapstructure:"min_savings_tokens"`
	// Summarizer is extractive (deterministic digests) or llm (one LLM
	// digest per output, cached, the deterministic one as fallback).
	// Default "extractive".
	Summarizer string `mapstructure:"summarizer"`
}

// Auth configures optional inbound authentication.
type Auth struct {
	// Keys are accepted inbound bearer keys; empty: no inbound auth.
	Keys []string `mapstructure:"keys"`
}

// UI configures the live page at /ui.
type UI struct {
	// Enabled serves the page and keeps its in-memory record of recent
	// requests; false: no page, and nothing about a request is kept.
	// Default true.
	Enabled bool `mapstructure:"enabled"`
	// MaxConversations bounds the conversations kept (the least recently
	// active one is dropped). Default 100.
	MaxConversations int `mapstructure:"max_conversations"`
	// MaxRequestsPerConversation bounds the requests kept per conversation
	// (the oldest is dropped). Default 500.
	MaxRequestsPerConversation int `mapstructure:"max_requests_per_conversation"`
	// Keys are admin keys: they open the page and see every caller's
	// conversations. Default none (auth.keys holders see their own; with
	// no keys at all, loopback clients see everything).
	Keys []string `mapstructure:"keys"`
}

// Flag describes one command-line flag and the config key it sets.
type flagSpec struct {
	key, name, usage string
}

// flagSpecs lists the flags serve accepts; every scalar key has one.
var flagSpecs = []flagSpec{
	{"listen", "listen", "address to listen on"},
	{"upstream", "upstream", "upstream base URL (LiteLLM, a provider)"},
	{"redis_url", "redis", "Redis URL (redis://host:port/db); empty: in-memory cache"},
	{"redis_cluster_url", "redis-cluster", "Redis Cluster URL (redis://host1:port1?addr=host2:port2&addr=host3:port3), instead of redis_url"},
	{"cache_max_bytes", "cache-max-bytes", "in-memory cache size in bytes"},
	{"originals_max_bytes", "originals-max-bytes", "in-memory size of the condensed-away originals' store (without Redis)"},
	{"max_body_bytes", "max-body-bytes", "largest chat request body accepted"},
	{"max_decompressed_bytes", "max-decompressed-bytes", "largest body after Content-Encoding is decoded"},
	{"max_inflight_condense", "max-inflight-condense", "chat requests read and condensed at once; past it forwarded unchanged (0: 4 x GOMAXPROCS)"},
	{"max_request_messages", "max-request-messages", "largest number of messages a chat request may have (0: no limit)"},
	{"default_context_window", "default-context-window", "context window assumed for unknown models"},
	{"shutdown_grace", "shutdown-grace", "time in-flight requests get after SIGTERM"},
	{"upstream_connect_timeout", "upstream-connect-timeout", "dial timeout toward the upstream"},
	{"upstream_header_timeout", "upstream-header-timeout", "wait for upstream response headers (0: none)"},
	{"scope_secret", "scope-secret", "secret keying caller scopes (prefer CONDENSE_SCOPE_SECRET; empty: random, scopes change on restart)"},
	{"scope_headers", "scope-headers", "request headers whose values make the caller's scope"},
	{"log_level", "log-level", "debug | info | warn | error"},
	{"log_format", "log-format", "json | text | auto"},
	{"condense.mode", "mode", "default condense mode: " + strings.Join(condense.Modes, " | ")},
	{"condense.threshold", "threshold", "fraction of the window that triggers condensing"},
	{"condense.target", "target", "fraction of the window to condense down to"},
	{"condense.prepare_threshold", "prepare-threshold", "fraction of the window that starts background summaries"},
	{"condense.keep_recent_turns", "keep-recent-turns", "recent steps always kept verbatim"},
	{"condense.chunk_tokens", "chunk-tokens", "tokens per level-1 summary chunk"},
	{"condense.summary_budget_tokens", "summary-budget-tokens", "summary tokens kept per level before folding upward"},
	{"condense.summarizer", "summarizer", "llm | extractive"},
	{"condense.summary_model", "summary-model", "model for summaries (empty: the request's model)"},
	{"condense.summary_api", "summary-api", "API summaries are asked in: auto (the request's own) | chat | messages | responses"},
	{"condense.summary_timeout", "summary-timeout", "timeout of one summarizer call"},
	{"condense.max_wait", "max-wait", "longest a request waits for summaries before going on with what is ready"},
	{"condense.prompt_file", "prompt-file", "file replacing the built-in summary prompt"},
	{"condense.max_messages", "max-messages", "condense above this many messages (0: off)"},
	{"condense.originals_ttl", "originals-ttl", "how long condensed-away originals stay retrievable"},
	{"selective.enabled", "selective", "enable selective condensing (feature flag)"},
	{"selective.keep_recent_tool_outputs", "keep-recent-tool-outputs", "newest tool outputs never digested"},
	{"selective.min_tool_output_tokens", "min-tool-output-tokens", "smallest tool output that is digested"},
	{"selective.exclude_tools", "exclude-tools", "tools whose outputs are never digested"},
	{"selective.clear_tool_inputs", "clear-tool-inputs", "also shorten very large old tool-call arguments"},
	{"selective.summarizer", "selective-summarizer", "extractive | llm: how tool outputs are digested"},
	{"selective.min_savings_tokens", "min-savings-tokens", "least tokens selective condensing frees once it starts (0: 10% of the window)"},
	{"auth.keys", "auth-keys", "accepted inbound API keys (empty: no inbound auth)"},
	{"ui.enabled", "ui", "serve the live page at /ui and keep its record of recent requests"},
	{"ui.max_conversations", "ui-max-conversations", "conversations the live page keeps"},
	{"ui.max_requests_per_conversation", "ui-max-requests-per-conversation", "requests the live page keeps per conversation"},
	{"ui.keys", "ui-keys", "admin keys of the live page: they see every caller's conversations"},
}

// Defaults returns the built-in configuration.
func Defaults() Config {
	return Config{
		Listen:                 ":8080",
		Upstream:               "https://api.openai.com",
		CacheMaxBytes:          256 << 20,
		OriginalsMaxBytes:      128 << 20,
		MaxBodyBytes:           64 << 20,
		MaxDecompressedBytes:   128 << 20,
		MaxRequestMessages:     100000,
		DefaultContextWindow:   128000,
		ShutdownGrace:          30 * time.Second,
		UpstreamConnectTimeout: 10 * time.Second,
		ScopeHeaders:           slices.Clone(proxy.CredentialHeaders),
		LogLevel:               "info",
		LogFormat:              "auto",
		Condense: Condense{
			Mode:                "auto",
			Threshold:           0.8,
			Target:              0.5,
			PrepareThreshold:    0.7,
			KeepRecentTurns:     3,
			ChunkTokens:         12000,
			SummaryBudgetTokens: 8000,
			Summarizer:          "llm",
			SummaryAPI:          "auto",
			SummaryTimeout:      60 * time.Second,
			MaxWait:             30 * time.Second,
			OriginalsTTL:        24 * time.Hour,
		},
		Selective: Selective{
			Enabled:               true,
			KeepRecentToolOutputs: 5,
			MinToolOutputTokens:   500,
			Summarizer:            "extractive",
			ExcludeTools:          []string{},
		},
		Auth: Auth{Keys: []string{}},
		UI: UI{
			Enabled:                    true,
			MaxConversations:           100,
			MaxRequestsPerConversation: 500,
			Keys:                       []string{},
		},
	}
}

// defaultsMap flattens Defaults into viper keys.
func defaultsMap() map[string]any {
	d := Defaults()
	return map[string]any{
		"listen":                             d.Listen,
		"upstream":                           d.Upstream,
		"redis_url":                          d.RedisURL,
		"redis_cluster_url":                  d.RedisClusterURL,
		"cache_max_bytes":                    d.CacheMaxBytes,
		"originals_max_bytes":                d.OriginalsMaxBytes,
		"max_inflight_condense":              d.MaxInflightCondense,
		"scope_secret":                       d.ScopeSecret,
		"scope_headers":                      d.ScopeHeaders,
		"max_body_bytes":                     d.MaxBodyBytes,
		"max_decompressed_bytes":             d.MaxDecompressedBytes,
		"max_request_messages":               d.MaxRequestMessages,
		"default_context_window":             d.DefaultContextWindow,
		"shutdown_grace":                     d.ShutdownGrace,
		"upstream_connect_timeout":           d.UpstreamConnectTimeout,
		"upstream_header_timeout":            d.UpstreamHeaderTimeout,
		"log_level":                          d.LogLevel,
		"log_format":                         d.LogFormat,
		"condense.mode":                      d.Condense.Mode,
		"condense.threshold":                 d.Condense.Threshold,
		"condense.target":                    d.Condense.Target,
		"condense.prepare_threshold":         d.Condense.PrepareThreshold,
		"condense.keep_recent_turns":         d.Condense.KeepRecentTurns,
		"condense.chunk_tokens":              d.Condense.ChunkTokens,
		"condense.summary_budget_tokens":     d.Condense.SummaryBudgetTokens,
		"condense.summarizer":                d.Condense.Summarizer,
		"condense.summary_model":             d.Condense.SummaryModel,
		"condense.summary_api":               d.Condense.SummaryAPI,
		"condense.summary_timeout":           d.Condense.SummaryTimeout,
		"condense.max_wait":                  d.Condense.MaxWait,
		"condense.prompt_file":               d.Condense.PromptFile,
		"condense.max_messages":              d.Condense.MaxMessages,
		"condense.originals_ttl":             d.Condense.OriginalsTTL,
		"selective.enabled":                  d.Selective.Enabled,
		"selective.keep_recent_tool_outputs": d.Selective.KeepRecentToolOutputs,
		"selective.min_tool_output_tokens":   d.Selective.MinToolOutputTokens,
		"selective.exclude_tools":            d.Selective.ExcludeTools,
		"selective.clear_tool_inputs":        d.Selective.ClearToolInputs,
		"selective.min_savings_tokens":       d.Selective.MinSavingsTokens,
		"selective.summarizer":               d.Selective.Summarizer,
		"auth.keys":                          d.Auth.Keys,
		"ui.enabled":                         d.UI.Enabled,
		"ui.max_conversations":               d.UI.MaxConversations,
		"ui.max_requests_per_conversation":   d.UI.MaxRequestsPerConversation,
		"ui.keys":                            d.UI.Keys,
	}
}

// RegisterFlags adds every configuration flag, plus --config, to fs. The
// flags' defaults are the built-in defaults, so --help shows them.
func RegisterFlags(fs *pflag.FlagSet) {
	fs.String("config", "", "YAML config file")
	defs := defaultsMap()
	for _, f := range flagSpecs {
		switch v := defs[f.key].(type) {
		case string:
			fs.String(f.name, v, f.usage)
		case bool:
			fs.Bool(f.name, v, f.usage)
		case int:
			fs.Int(f.name, v, f.usage)
		case int64:
			fs.Int64(f.name, v, f.usage)
		case float64:
			fs.Float64(f.name, v, f.usage)
		case time.Duration:
			fs.Duration(f.name, v, f.usage)
		case []string:
			fs.StringSlice(f.name, v, f.usage)
		default:
			panic(fmt.Sprintf("config: flag %s has unsupported default %T", f.name, v))
		}
	}
}

// Load builds the Config from defaults, the file named by --config (or
// CONDENSE_CONFIG), the environment entries in environ ("KEY=value", as
// os.Environ returns them) and the flags in fs that were set. fs may be nil.
func Load(fs *pflag.FlagSet, environ []string) (*Config, error) {
	v := viper.New()
	for k, val := range defaultsMap() {
		v.SetDefault(k, val)
	}
	v.SetDefault("models", []any{})
	env := envMap(environ)
	for k := range defaultsMap() {
		if val, ok := env[EnvName(k)]; ok {
			if isList(k) {
				v.Set(k, splitList(val))
			} else {
				v.Set(k, val)
			}
		}
	}

	file := env[EnvPrefix+"_CONFIG"]
	if fs != nil {
		if f := fs.Lookup("config"); f != nil && f.Changed {
			file = f.Value.String()
		}
	}
	if file != "" {
		v.SetConfigFile(file)
		v.SetConfigType("yaml")
		if err := v.ReadInConfig(); err != nil {
			return nil, fmt.Errorf("reading config file %s: %w", file, err)
		}
	}
	// viper ranks Set values over the file, so the environment (applied
	// with Set above) beats the file; flags, applied with Set below, win.
	if fs != nil {
		for _, f := range flagSpecs {
			fl := fs.Lookup(f.name)
			if fl == nil || !fl.Changed {
				continue
			}
			if sv, ok := fl.Value.(pflag.SliceValue); ok {
				v.Set(f.key, sv.GetSlice())
			} else {
				v.Set(f.key, fl.Value.String())
			}
		}
	}

	var c Config
	err := v.Unmarshal(&c, viper.DecodeHook(mapstructure.ComposeDecodeHookFunc(
		mapstructure.StringToTimeDurationHookFunc(),
		mapstructure.StringToSliceHookFunc(","),
	)))
	if err != nil {
		return nil, fmt.Errorf("decoding config: %w", err)
	}
	if err := c.Validate(); err != nil {
		return nil, err
	}
	return &c, nil
}

// Keys lists every configuration key (dotted), sorted.
func Keys() []string {
	var out []string
	for k := range defaultsMap() {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// EnvName is the environment variable that sets key.
func EnvName(key string) string {
	return EnvPrefix + "_" + strings.ToUpper(strings.NewReplacer(".", "_", "-", "_").Replace(key))
}

func isList(key string) bool {
	return key == "selective.exclude_tools" || key == "auth.keys" || key == "ui.keys" || key == "scope_headers"
}

func splitList(s string) []string {
	out := []string{}
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// validHeaderName reports whether h is an HTTP field name (RFC 9110 token).
func validHeaderName(h string) bool {
	if h == "" {
		return false
	}
	for _, c := range h {
		if c > 127 || !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune("!#$%&'*+-.^_`|~", c)) {
			return false
		}
	}
	return true
}

func envMap(environ []string) map[string]string {
	m := make(map[string]string)
	for _, kv := range environ {
		k, val, ok := strings.Cut(kv, "=")
		if ok && strings.HasPrefix(k, EnvPrefix+"_") {
			m[k] = val
		}
	}
	return m
}

// Validate reports every invalid setting at once.
func (c *Config) Validate() error {
	var errs []error
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }

	if c.Listen == "" {
		bad("listen: must not be empty")
	}
	if u, err := url.Parse(c.Upstream); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		bad("upstream: %q is not an http(s) URL with a host", c.Upstream)
	}
	if c.RedisURL != "" {
		if u, err := url.Parse(c.RedisURL); err != nil || (u.Scheme != "redis" && u.Scheme != "rediss") || u.Host == "" {
			bad("redis_url: %q is not a redis:// or rediss:// URL with a host", c.RedisURL)
		}
	}
	if c.RedisClusterURL != "" {
		if c.RedisURL != "" {
			bad("redis_url and redis_cluster_url are both set; use one")
		}
		if u, err := url.Parse(c.RedisClusterURL); err != nil || (u.Scheme != "redis" && u.Scheme != "rediss") || u.Host == "" {
			bad("redis_cluster_url: %q is not a redis:// or rediss:// URL with a host", c.RedisClusterURL)
		}
	}
	if c.CacheMaxBytes <= 0 {
		bad("cache_max_bytes: must be positive, got %d", c.CacheMaxBytes)
	}
	if c.OriginalsMaxBytes <= 0 {
		bad("originals_max_bytes: must be positive, got %d", c.OriginalsMaxBytes)
	}
	if c.MaxInflightCondense < 0 {
		bad("max_inflight_condense: must not be negative, got %d", c.MaxInflightCondense)
	}
	if c.MaxBodyBytes <= 0 {
		bad("max_body_bytes: must be positive, got %d", c.MaxBodyBytes)
	}
	if c.MaxDecompressedBytes <= 0 {
		bad("max_decompressed_bytes: must be positive, got %d", c.MaxDecompressedBytes)
	}
	if c.MaxRequestMessages < 0 {
		bad("max_request_messages: must not be negative, got %d", c.MaxRequestMessages)
	}
	if c.DefaultContextWindow <= 0 {
		bad("default_context_window: must be positive, got %d", c.DefaultContextWindow)
	}
	if c.ShutdownGrace < 0 {
		bad("shutdown_grace: must not be negative, got %s", c.ShutdownGrace)
	}
	if c.UpstreamConnectTimeout < 0 {
		bad("upstream_connect_timeout: must not be negative, got %s", c.UpstreamConnectTimeout)
	}
	if c.UpstreamHeaderTimeout < 0 {
		bad("upstream_header_timeout: must not be negative, got %s", c.UpstreamHeaderTimeout)
	}
	if len(c.ScopeHeaders) == 0 {
		bad("scope_headers: must name at least one header")
	}
	for i, h := range c.ScopeHeaders {
		if !validHeaderName(h) {
			bad("scope_headers[%d]: %q is not a header name", i, h)
		}
	}
	if s := c.ScopeSecret; s != "" && len(s) < 16 {
		bad("scope_secret: must be at least 16 characters, got %d", len(s))
	}
	switch c.LogLevel {
	case "debug", "info", "warn", "error":
	default:
		bad("log_level: %q is not debug, info, warn or error", c.LogLevel)
	}
	switch c.LogFormat {
	case "json", "text", "auto":
	default:
		bad("log_format: %q is not json, text or auto", c.LogFormat)
	}

	cd := c.Condense
	if !condense.ValidMode(cd.Mode) {
		bad("condense.mode: %q is not one of %s", cd.Mode, strings.Join(condense.Modes, ", "))
	}
	if cd.Threshold <= 0 || cd.Threshold > 1 {
		bad("condense.threshold: must be in (0,1], got %g", cd.Threshold)
	}
	if cd.Target <= 0 || cd.Target >= cd.Threshold {
		bad("condense.target: must be in (0, threshold=%g), got %g", cd.Threshold, cd.Target)
	}
	if cd.PrepareThreshold < 0 || cd.PrepareThreshold > cd.Threshold {
		bad("condense.prepare_threshold: must be in [0, threshold=%g], got %g", cd.Threshold, cd.PrepareThreshold)
	}
	if cd.KeepRecentTurns < 1 {
		bad("condense.keep_recent_turns: must be at least 1, got %d", cd.KeepRecentTurns)
	}
	if cd.ChunkTokens < 256 {
		bad("condense.chunk_tokens: must be at least 256, got %d", cd.ChunkTokens)
	}
	if cd.SummaryBudgetTokens < 256 {
		bad("condense.summary_budget_tokens: must be at least 256, got %d", cd.SummaryBudgetTokens)
	}
	if cd.Summarizer != "llm" && cd.Summarizer != "extractive" {
		bad("condense.summarizer: %q is not llm or extractive", cd.Summarizer)
	}
	switch cd.SummaryAPI {
	case "auto", "chat", "messages", "responses":
	default:
		bad("condense.summary_api: %q is not auto, chat, messages or responses", cd.SummaryAPI)
	}
	if cd.MaxWait <= 0 {
		bad("condense.max_wait: must be positive, got %s", cd.MaxWait)
	}
	if cd.SummaryTimeout <= 0 {
		bad("condense.summary_timeout: must be positive, got %s", cd.SummaryTimeout)
	}
	if cd.PromptFile != "" {
		if _, err := os.Stat(cd.PromptFile); err != nil {
			bad("condense.prompt_file: %v", err)
		}
	}
	if cd.MaxMessages < 0 {
		bad("condense.max_messages: must not be negative, got %d", cd.MaxMessages)
	}
	if cd.OriginalsTTL <= 0 {
		bad("condense.originals_ttl: must be positive, got %s", cd.OriginalsTTL)
	}

	s := c.Selective
	if s.KeepRecentToolOutputs < 0 {
		bad("selective.keep_recent_tool_outputs: must not be negative, got %d", s.KeepRecentToolOutputs)
	}
	if s.Summarizer != "llm" && s.Summarizer != "extractive" {
		bad("selective.summarizer: %q is not llm or extractive", s.Summarizer)
	}
	if s.MinSavingsTokens < 0 {
		bad("selective.min_savings_tokens: must not be negative, got %d", s.MinSavingsTokens)
	}
	if s.MinToolOutputTokens < 0 {
		bad("selective.min_tool_output_tokens: must not be negative, got %d", s.MinToolOutputTokens)
	}
	for i, k := range c.Auth.Keys {
		if strings.TrimSpace(k) == "" {
			bad("auth.keys[%d]: must not be empty", i)
		}
	}
	if c.UI.Enabled {
		if c.UI.MaxConversations < 1 {
			bad("ui.max_conversations: must be at least 1, got %d", c.UI.MaxConversations)
		}
		if c.UI.MaxRequestsPerConversation < 1 {
			bad("ui.max_requests_per_conversation: must be at least 1, got %d", c.UI.MaxRequestsPerConversation)
		}
	}
	for i, k := range c.UI.Keys {
		if strings.TrimSpace(k) == "" {
			bad("ui.keys[%d]: must not be empty", i)
		}
	}
	for i, m := range c.Models {
		if err := m.validate(); err != nil {
			bad("models[%d] (%s): %w", i, m.Match, err)
		}
		if m.Threshold != 0 && m.Threshold <= cd.Target {
			bad("models[%d] (%s): threshold %g must be above condense.target %g", i, m.Match, m.Threshold, cd.Target)
		}
	}
	if len(errs) == 0 {
		return nil
	}
	return fmt.Errorf("invalid configuration:\n%w", errors.Join(errs...))
}
