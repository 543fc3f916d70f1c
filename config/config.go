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
	"maps"
	"net/url"
	"os"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/go-viper/mapstructure/v2"
	"github.com/spf13/pflag"
	"github.com/spf13/viper"
	yaml "go.yaml.in/yaml/v3"
)

// EnvPrefix is the prefix of every environment variable the proxy reads.
const EnvPrefix = "CONDENSE"

// Config is the whole configuration. Each field below is one key of the
// keys table (keys.go), which gives its name in YAML, its flag, its
// environment variable, its default and its range; `serve --help` and
// README's Configuration table list them. Load fills every field from the
// defaults first, so zero values here mean what the comments say only when
// set on purpose.
type Config struct {
	// Listen is the address the HTTP server binds.
	Listen string
	// Upstream is the base URL requests are forwarded to; the request path
	// is appended to it. Required: there is no default (a caller's key
	// must not go to a provider the operator did not name).
	Upstream string
	// RedisURL selects the Redis cache ("redis://host:port/db"). Empty: the
	// in-memory cache only.
	RedisURL string
	// RedisClusterURL selects a Redis Cluster instead, in go-redis's form
	// ("redis://host1:port1?addr=host2:port2&addr=host3:port3").
	RedisClusterURL string
	// RedisTimeout bounds one Redis command (dial, read and write); a
	// slower one counts as a failure.
	RedisTimeout time.Duration
	// RedisFailThreshold is how many consecutive failed commands take
	// Redis for down (requests are then served from memory, and commands
	// are not sent but for one probe per RedisProbeInterval).
	RedisFailThreshold int
	// RedisProbeInterval is how often, while Redis is down, one command
	// tries it again.
	RedisProbeInterval time.Duration
	// CacheMaxBytes bounds the in-memory cache (values plus keys).
	CacheMaxBytes int64
	// OriginalsMaxBytes bounds the in-memory store of condensed-away
	// originals, kept apart from the cache so large originals never push
	// summaries out. Used without Redis (with Redis the originals go to
	// the cache's store).
	OriginalsMaxBytes int64
	// MaxBodyBytes bounds a request body as received. Larger: 413.
	MaxBodyBytes int64
	// MaxDecompressedBytes bounds a compressed body once decoded. Larger:
	// 413.
	MaxDecompressedBytes int64
	// MaxInflightCondense caps the requests being read and condensed at
	// once; past it a request waits for a place, then is forwarded
	// unchanged with X-Condense-Degraded. 0: 4 × GOMAXPROCS.
	MaxInflightCondense int
	// InflightWait is how long a request waits for a place among
	// MaxInflightCondense before it is forwarded unchanged.
	InflightWait time.Duration
	// MaxRequestMessages refuses (413) requests with more messages than
	// this, before any counting. 0: no limit.
	MaxRequestMessages int
	// DefaultContextWindow is the window assumed for models the registry
	// does not know.
	DefaultContextWindow int
	// ShutdownGrace is how long in-flight requests (streams included) may
	// run after SIGTERM.
	ShutdownGrace time.Duration
	// UpstreamConnectTimeout bounds dialing the upstream.
	UpstreamConnectTimeout time.Duration
	// UpstreamHeaderTimeout bounds the wait for upstream response headers;
	// 0 means no limit (reasoning models can think for minutes).
	UpstreamHeaderTimeout time.Duration
	// ScopeSecret keys the HMAC that maps a request's credentials to the
	// caller's scope (cache keys, originals, the live page). Empty: with
	// Redis, a random secret kept in Redis and shared by every replica;
	// without, a random secret made at start (and a warning logged), so
	// scopes change on restart.
	ScopeSecret string
	// ScopeHeaders are the request headers whose values make the caller's
	// scope; by default CredentialHeaders.
	ScopeHeaders []string
	// LogLevel is debug, info, warn or error.
	LogLevel string
	// LogFormat is json, text or auto (text on a terminal).
	LogFormat string

	Condense  Condense
	Selective Selective
	Anthropic Anthropic
	Auth      Auth
	UI        UI
	KeepAlive KeepAlive
	Memory    Memory
	LiteLLM   LiteLLM
	// Models are the model entries (YAML only), tried before the built-in
	// registry.
	Models []ModelConfig

	// Warnings are what Load noticed and accepted: CONDENSE_* environment
	// variables that set no key, each with the nearest one. Not a key.
	Warnings []string
}

// Condense configures the condensing engine.
type Condense struct {
	// Mode is the default for requests without X-Condense-Mode, one of
	// Modes.
	Mode string
	// Threshold is the fraction of the context window above which a
	// request is condensed, in [0.01,1]; 0: each model's by its window
	// (DefaultThreshold).
	Threshold float64
	// Target is the fraction of the window condensing aims for; below
	// Threshold. 0: 5/8 of each model's threshold, at most 0.5
	// (DefaultTarget).
	Target float64
	// PrepareThreshold starts background summarization ahead of time, at
	// most Threshold; 0 (the default) means each model's threshold - 0.1.
	PrepareThreshold float64
	// KeepRecentTurns is the minimum number of recent steps kept verbatim.
	KeepRecentTurns int
	// ChunkTokens is the size of a level-1 summary chunk.
	ChunkTokens int
	// SummaryBudgetTokens bounds the summaries kept at one level before
	// they are folded into the next.
	SummaryBudgetTokens int
	// Summarizer is llm or extractive.
	Summarizer string
	// SummaryModel is the model the LLM summarizer calls; empty: the
	// request's own model.
	SummaryModel string
	// SummaryAPI is the API the LLM summarizer asks in: auto (the wire
	// format of the request being condensed), chat, messages, responses or
	// gemini.
	SummaryAPI string
	// SummaryTimeout bounds one summarizer call.
	SummaryTimeout time.Duration
	// SummarizerConcurrency bounds the summarizer calls in flight at once
	// in this replica; a call past it waits for a slot.
	SummarizerConcurrency int
	// MaxWait bounds how long one request waits for summaries before it
	// goes on with what is ready (extractive summaries, the window) and
	// says so in X-Condense-Degraded.
	MaxWait time.Duration
	// PromptFile replaces the built-in summary prompt; empty: the built-in
	// one.
	PromptFile string
	// MaxMessages condenses requests with more messages than this; 0 means
	// no message-count trigger.
	MaxMessages int
	// OriginalsTTL is how long condensed-away messages stay retrievable.
	OriginalsTTL time.Duration
	// MaxSummarizerCalls bounds the summarizer calls one request may make;
	// a request whose plan needs more makes none (extractive summaries).
	MaxSummarizerCalls int
	// AutoLLMShare bounds what auto spends on LLM summaries of a
	// conversation: this share of its estimated uncondensed bill so far;
	// past it, auto's summaries are extractive. 0: never the LLM in auto.
	AutoLLMShare float64
	// StandIns is what stands for the steps auto's cut omits: "summaries"
	// (extractive or LLM, keeping the task, errors, decisions and paths)
	// or "notes" (what was there — calls, errors, files — and the ids the
	// recall tool finds it by; no summary).
	StandIns string
	// Defer is deprecated and has no effect (a warning at start when
	// set): it forwarded a request over the threshold as received while
	// condensing it would not pay, and changed no measured bill
	// (BENCHMARKS.md). The key stays so that configs that set it load.
	Defer bool
	// ColdTurns: on a request over the threshold after its conversation
	// was idle longer than the model's cache_ttl (its prefix is written
	// again anyway), the conversation's edits make their next move now,
	// at least to the target (condense/cold.go). Default true.
	ColdTurns bool
	// HoldoutShare is the share of conversations, in [0, 1], forwarded
	// as received (the holdout arm) while the proxy computes what it
	// would have done, chosen by a hash of the caller's scope and the
	// conversation: the same on every replica and after restarts. 0 (the
	// default): none.
	HoldoutShare float64
}

// Selective configures selective condensing of old tool outputs.
type Selective struct {
	// Enabled is the feature flag.
	Enabled bool
	// KeepRecentToolOutputs protects the newest tool outputs; 0: none.
	KeepRecentToolOutputs int
	// MinToolOutputTokens is the smallest output that is digested.
	MinToolOutputTokens int
	// ExcludeTools are tool names whose outputs are never digested.
	ExcludeTools []string
	// ClearToolInputs also shortens very large tool-call arguments.
	ClearToolInputs bool
	// MinSavingsTokens, when above 0, is how far the digest frontier
	// moves at once (tokens); 0: the cost model's stride for the
	// conversation.
	MinSavingsTokens int
	// Summarizer is extractive (deterministic digests) or llm (one LLM
	// digest per output, cached, the deterministic one as fallback).
	Summarizer string
	// Eager digests old tool outputs from the first request on (selective
	// and auto modes), below the threshold too.
	Eager bool
	// DigestsFirst keeps a conversation's first digests alone even when
	// they would not pay for their re-write before the window has to come
	// (by default the window comes on their bust).
	DigestsFirst bool
	// LLMDigestInputBytes bounds the tool output an LLM digest is asked
	// about (its middle is cut); LLMDigestMaxTokens bounds the digest.
	LLMDigestInputBytes int
	LLMDigestMaxTokens  int
}

// Auth configures optional inbound authentication.
type Auth struct {
	// Keys are accepted inbound keys; empty: no inbound auth.
	Keys []string
}

// UI configures the live page at /ui.
type UI struct {
	// Enabled serves the page and keeps its in-memory record of recent
	// requests; false: no page, and nothing about a request is kept.
	Enabled bool
	// MaxConversations bounds the conversations kept (the least recently
	// active one is dropped).
	MaxConversations int
	// MaxRequestsPerConversation bounds the requests kept per conversation
	// (the oldest is dropped).
	MaxRequestsPerConversation int
	// Keys are admin keys: they open the page and see every caller's
	// conversations. Empty: auth.keys holders see their own.
	Keys []string
}

// Anthropic configures what the proxy does to Anthropic Messages requests
// besides condensing them.
type Anthropic struct {
	// StripContextManagement removes the request's context_management
	// field, and context-management-2025-06-27 from its anthropic-beta
	// header, before forwarding (/v1/messages and count_tokens), for
	// upstreams that refuse them ("Extra inputs are not permitted").
	// Default false: forwarded as received.
	StripContextManagement bool
}

// Memory configures the conversations' memory (package memory): the
// steps condensed away and the summaries made, searched by the recall
// tool and the relevant-context block. It is kept only when one of them
// is on.
type Memory struct {
	// RecallTool adds condense_recall to every request of a condensed
	// conversation; the proxy answers it. Default false.
	RecallTool bool
	// RelevantContext puts the items most relevant to the conversation's
	// focus beside its summaries, changed only when the cut moves.
	// Default false.
	RelevantContext bool
	// MaxRecallRounds bounds the rounds of recalls answered for one
	// answer. Default 3.
	MaxRecallRounds int
	// MaxRecallCalls bounds the recall calls of one answer that are
	// answered; the rest are left out and the model told so. Default 4.
	MaxRecallCalls int
	// RecallBudgetTokens bounds one recall's answer and the
	// relevant-context block. Default 2000.
	RecallBudgetTokens int
	// EmbeddingModel, when set, makes memory searches hybrid: BM25 fused
	// with embeddings from the upstream's /v1/embeddings (with the
	// caller's credentials), vectors cached. Default "": BM25 alone.
	EmbeddingModel string
	// MaxConversationBytes bounds one conversation's memory. Default 8 MiB.
	MaxConversationBytes int64
	// MaxBytes is the memory's in-memory store without Redis. Default
	// 128 MiB.
	MaxBytes int64
}

// LiteLLM configures what the proxy reads of a LiteLLM upstream: its
// /model/info, which gives each model alias's window, output limit and
// prices (package internal/litellm). An upstream that does not answer it
// (404, not JSON) is not asked again until restart.
type LiteLLM struct {
	// ModelInfo reads the upstream's /model/info at start and every
	// Refresh; an alias it lists takes its numbers from it, over the
	// built-in registry, under the config's models: entries. Default
	// true.
	ModelInfo bool
	// Key is sent as a bearer token to /model/info (LiteLLM's master
	// key, or a key allowed to read model info). Empty: asked without
	// one; a 401 or 403 then stops the asking. Default empty.
	Key string
	// Refresh is how often /model/info is read again; 0: only at start.
	// Default 10m.
	Refresh time.Duration
}

// Enabled reports whether anything reads the memory.
func (m Memory) Enabled() bool { return m.RecallTool || m.RelevantContext }

// KeepAlive configures the keep-alive pings that keep a provider's prompt
// cache warm across an agent's idle gaps (package keepalive). They are
// paid with the caller's own credentials, so they are off by default.
type KeepAlive struct {
	// Enabled turns the pings on. Default false.
	Enabled bool
	// Models are the name globs (as models[].match: case-insensitive,
	// tried with and without a provider prefix) of the models pinged;
	// empty: every model. Default none (every model).
	Models []string
	// MaxPings bounds the pings per idle gap of a conversation. Default 2.
	MaxPings int
	// MinPrefixTokens is the smallest forwarded request (tokens) whose
	// cache is kept warm. Default 4096.
	MinPrefixTokens int
}

// Defaults returns the built-in configuration: every key's default from
// the keys table, no model entries.
func Defaults() Config {
	var c Config
	for _, k := range table {
		k.set(&c, k.Default)
	}
	return c
}

// RegisterFlags adds every configuration key's flag, plus --config, to fs.
// The flags' defaults are the built-in defaults, so --help shows them.
func RegisterFlags(fs *pflag.FlagSet) {
	fs.String("config", "", "YAML config file")
	for _, k := range table {
		switch v := k.Default.(type) {
		case string:
			fs.String(k.Flag, v, k.Usage)
		case bool:
			fs.Bool(k.Flag, v, k.Usage)
		case int:
			fs.Int(k.Flag, v, k.Usage)
		case int64:
			fs.Int64(k.Flag, v, k.Usage)
		case float64:
			fs.Float64(k.Flag, v, k.Usage)
		case time.Duration:
			fs.Duration(k.Flag, v, k.Usage)
		case []string:
			fs.StringSlice(k.Flag, v, k.Usage)
		default:
			panic(fmt.Sprintf("config: key %s has unsupported default %T", k.Name, v))
		}
	}
}

// Load builds the Config from defaults, the file named by --config (or
// CONDENSE_CONFIG), the environment entries in environ ("KEY=value", as
// os.Environ returns them) and the flags in fs that were set. fs may be nil.
// Every value that cannot be decoded, and every invalid setting, is
// reported at once.
func Load(fs *pflag.FlagSet, environ []string) (*Config, error) {
	v := viper.New()
	for _, k := range table {
		v.SetDefault(k.Name, k.Default)
	}
	v.SetDefault("models", []any{})
	env := envMap(environ)
	// from says where each key's value comes from, for errors and for
	// the defaults that follow other keys; a later source overwrites.
	from := sources{}
	for _, k := range table {
		if val, ok := env[k.Env()]; ok {
			if k.List() {
				v.Set(k.Name, splitList(val))
			} else {
				v.Set(k.Name, val)
			}
		}
	}

	var errs []error
	file := env[EnvPrefix+"_CONFIG"]
	if fs != nil {
		if f := fs.Lookup("config"); f != nil && f.Changed {
			file = f.Value.String()
		}
	}
	if file != "" {
		raw, err := os.ReadFile(file)
		if err != nil {
			return nil, fmt.Errorf("reading config file %s: %w", file, err)
		}
		var m map[string]any
		if err := yaml.Unmarshal(raw, &m); err != nil {
			return nil, fmt.Errorf("reading config file %s: %w", file, err)
		}
		for _, err := range unknownKeys(m) {
			errs = append(errs, fmt.Errorf("%w (in file %s)", err, file))
		}
		if err := v.MergeConfigMap(m); err != nil {
			return nil, fmt.Errorf("reading config file %s: %w", file, err)
		}
		for _, name := range fileKeys(m) {
			from[name] = "file " + file
		}
	}
	// The environment beats the file: its sources are noted after the
	// file's.
	for _, k := range table {
		if _, ok := env[k.Env()]; ok {
			from[k.Name] = "environment variable " + k.Env()
		}
	}
	// viper ranks Set values over the file, so the environment (applied
	// with Set above) beats the file; flags, applied with Set below, win.
	if fs != nil {
		for _, k := range table {
			fl := fs.Lookup(k.Flag)
			if fl == nil || !fl.Changed {
				continue
			}
			if sv, ok := fl.Value.(pflag.SliceValue); ok {
				v.Set(k.Name, sv.GetSlice())
			} else {
				v.Set(k.Name, fl.Value.String())
			}
			from[k.Name] = "flag --" + k.Flag
		}
	}

	// A value that cannot be decoded is reported, and its key validated
	// no further (its default stands in for the rules between keys), so
	// every bad key is named at once, each once.
	c := Config{Warnings: unknownEnv(env)}
	failed := map[string]bool{}
	for _, k := range table {
		if raw := v.Get(k.Name); decode(raw, k.field(&c)) != nil {
			errs = append(errs, fmt.Errorf("%s: cannot read %v as %s%s", k.Name, quoted(raw), k.Kind.describe(), from.of(k.Name)))
			k.set(&c, k.Default)
			failed[k.Name] = true
		}
	}
	if err := decode(v.Get("models"), &c.Models); err != nil {
		errs = append(errs, fmt.Errorf("models: %w%s", err, from.of("models")))
		c.Models = nil
	}
	c.follow(from)
	errs = append(errs, c.problems(failed, from)...)
	if len(errs) > 0 {
		return nil, fmt.Errorf("invalid configuration:\n%w", errors.Join(errs...))
	}
	return &c, nil
}

// decode converts a value as the file, the environment or a flag gives it
// (a string, a number, a list) into the field out points at.
func decode(in any, out any) error {
	d, err := mapstructure.NewDecoder(&mapstructure.DecoderConfig{
		Result:           out,
		WeaklyTypedInput: true,
		DecodeHook: mapstructure.ComposeDecodeHookFunc(
			mapstructure.StringToTimeDurationHookFunc(),
			mapstructure.StringToSliceHookFunc(","),
		),
	})
	if err != nil {
		return err
	}
	return d.Decode(in)
}

// quoted writes a raw value for an error: strings quoted.
func quoted(v any) string {
	if s, ok := v.(string); ok {
		return fmt.Sprintf("%q", s)
	}
	return fmt.Sprintf("%v", v)
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

// Validate reports every invalid setting at once: every number finite
// and in its key's range (the keys table), then the rules between keys
// and the values of strings, lists and model entries. A key is named once,
// by its first problem.
func (c *Config) Validate() error {
	if errs := c.problems(nil, nil); len(errs) > 0 {
		return fmt.Errorf("invalid configuration:\n%w", errors.Join(errs...))
	}
	return nil
}

// problems lists every invalid setting, but for the keys in skip
// (reported already); each error names where its value came from
// (from, when not nil).
func (c *Config) problems(skip map[string]bool, from sources) []error {
	var errs []error
	reported := maps.Clone(skip)
	if reported == nil {
		reported = map[string]bool{}
	}
	bad := func(key, format string, a ...any) {
		if reported[key] {
			return
		}
		reported[key] = true
		errs = append(errs, fmt.Errorf("%s: %s%s", key, fmt.Sprintf(format, a...), from.of(key)))
	}
	// val writes another key's value for a rule between keys, with its
	// source: "condense.threshold=0.6 (from flag --threshold)".
	val := func(key string, v any) string {
		if s := from.of(key); s != "" {
			return fmt.Sprintf("%s=%v%s", key, v, s)
		}
		if from != nil {
			return fmt.Sprintf("%s=%v (its default)", key, v)
		}
		return fmt.Sprintf("%s=%v", key, v)
	}
	for _, k := range table {
		if reported[k.Name] {
			continue
		}
		if err := k.checkRange(k.get(c)); err != nil {
			reported[k.Name] = true
			errs = append(errs, fmt.Errorf("%w%s", err, from.of(k.Name)))
		}
	}

	if c.Listen == "" {
		bad("listen", "must not be empty")
	}
	if c.Upstream == "" {
		bad("upstream", "not set: the proxy forwards every request, with its caller's key, to this base URL and has none of "+
			"its own (LiteLLM: http://localhost:4000; OpenAI: https://api.openai.com); set it with --upstream, "+
			"the environment variable %s or upstream: in the config file", EnvName("upstream"))
	} else if u, err := url.Parse(c.Upstream); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		bad("upstream", "%q is not an http(s) URL with a host", c.Upstream)
	}
	if c.RedisURL != "" && !IsRedisURL(c.RedisURL) {
		bad("redis_url", "%q is not a redis:// or rediss:// URL with a host", c.RedisURL)
	}
	if c.RedisClusterURL != "" {
		if c.RedisURL != "" {
			bad("redis_cluster_url", "redis_url is set too; use one")
		}
		if !IsRedisURL(c.RedisClusterURL) {
			bad("redis_cluster_url", "%q is not a redis:// or rediss:// URL with a host", c.RedisClusterURL)
		}
	}
	if len(c.ScopeHeaders) == 0 {
		bad("scope_headers", "must name at least one header")
	}
	for i, h := range c.ScopeHeaders {
		if !validHeaderName(h) {
			bad(fmt.Sprintf("scope_headers[%d]", i), "%q is not a header name", h)
		}
	}
	if s := c.ScopeSecret; s != "" && len(s) < 16 {
		bad("scope_secret", "must be at least 16 characters, got %d", len(s))
	}
	switch c.LogLevel {
	case "debug", "info", "warn", "error":
	default:
		bad("log_level", "%q is not debug, info, warn or error", c.LogLevel)
	}
	switch c.LogFormat {
	case "json", "text", "auto":
	default:
		bad("log_format", "%q is not json, text or auto", c.LogFormat)
	}

	cd := c.Condense
	if !slices.Contains(Modes, cd.Mode) {
		bad("condense.mode", "%q is not one of %s", cd.Mode, strings.Join(Modes, ", "))
	}
	for _, k := range []struct {
		name string
		v    float64
	}{{"condense.threshold", cd.Threshold}, {"condense.target", cd.Target}} {
		if k.v != 0 && k.v < minFraction && !reported[k.name] {
			bad(k.name, "must be 0 (the default, by each model) or at least %g, got %g", minFraction, k.v)
		}
	}
	// Unset, the threshold is each model's by its window: the lowest,
	// LargeWindowThreshold, is what a target or prepare_threshold set
	// alone must stay under.
	threshold, thresholdIs := cd.Threshold, val("condense.threshold", cd.Threshold)
	if threshold == 0 {
		threshold = LargeWindowThreshold
		thresholdIs = fmt.Sprintf("%g (condense.threshold unset: the threshold of models of %d tokens or more; set it too)", threshold, LargeWindow)
	}
	if cd.Target != 0 && !(cd.Target < threshold) && !reported["condense.threshold"] {
		bad("condense.target", "must be below %s, got %g", thresholdIs, cd.Target)
	}
	if !(cd.PrepareThreshold <= threshold) && !reported["condense.threshold"] {
		bad("condense.prepare_threshold", "must be at most %s (unset, 0: each model's threshold - 0.1), got %g",
			thresholdIs, cd.PrepareThreshold)
	}
	if cd.Summarizer != "llm" && cd.Summarizer != "extractive" {
		bad("condense.summarizer", "%q is not llm or extractive", cd.Summarizer)
	}
	switch cd.SummaryAPI {
	case "auto", "chat", "messages", "responses", "gemini":
	default:
		bad("condense.summary_api", "%q is not auto, chat, messages, responses or gemini", cd.SummaryAPI)
	}
	switch {
	case cd.StandIns != "summaries" && cd.StandIns != "notes":
		bad("condense.stand_ins", "%q is not summaries or notes", cd.StandIns)
	case cd.StandIns == "notes" && !c.Memory.RecallTool:
		bad("condense.stand_ins", "notes name what was condensed and leave the rest to the recall tool: set memory.recall_tool true, or stand_ins summaries")
	}
	if cd.PromptFile != "" {
		if _, err := os.Stat(cd.PromptFile); err != nil {
			bad("condense.prompt_file", "%v", err)
		}
	}

	s := c.Selective
	if s.Summarizer != "llm" && s.Summarizer != "extractive" {
		bad("selective.summarizer", "%q is not llm or extractive", s.Summarizer)
	}
	for i, k := range c.Auth.Keys {
		if strings.TrimSpace(k) == "" {
			bad(fmt.Sprintf("auth.keys[%d]", i), "must not be empty")
		}
	}
	if c.UI.Enabled {
		if c.UI.MaxConversations < 1 {
			bad("ui.max_conversations", "must be at least 1 while the page is on, got %d", c.UI.MaxConversations)
		}
		if c.UI.MaxRequestsPerConversation < 1 {
			bad("ui.max_requests_per_conversation", "must be at least 1 while the page is on, got %d", c.UI.MaxRequestsPerConversation)
		}
	}
	if mem := c.Memory; c.RedisURL == "" && c.RedisClusterURL == "" && mem.MaxConversationBytes > mem.MaxBytes {
		bad("memory.max_conversation_bytes", "%d is more than the whole memory store, %s (without Redis)",
			mem.MaxConversationBytes, val("memory.max_bytes", mem.MaxBytes))
	}
	if k := c.LiteLLM.Key; k != "" && strings.TrimSpace(k) != k {
		bad("litellm.key", "has leading or trailing spaces")
	}
	for i, k := range c.UI.Keys {
		if strings.TrimSpace(k) == "" {
			bad(fmt.Sprintf("ui.keys[%d]", i), "must not be empty")
		}
	}
	for i, g := range c.KeepAlive.Models {
		if _, err := path.Match(strings.ToLower(g), ""); err != nil || strings.TrimSpace(g) == "" {
			bad(fmt.Sprintf("keepalive.models[%d]", i), "%q is not a glob", g)
		}
	}
	for i, m := range c.Models {
		if probs := m.problems(); len(probs) > 0 {
			for _, err := range probs {
				errs = append(errs, fmt.Errorf("models[%d].%w (entry %q)%s", i, err, m.Match, from.of("models")))
			}
			continue
		}
		// condense.target, when set, is one fraction for every model: a
		// model's threshold at or below it is refused. (Unset, each
		// model's target follows its threshold: DefaultTarget.)
		if m.Threshold != 0 && cd.Target != 0 && m.Threshold <= cd.Target {
			bad(fmt.Sprintf("models[%d].threshold", i), "%g must be above %s (entry %q; condense.target is every model's: set it below %g)",
				m.Threshold, val("condense.target", cd.Target), m.Match, m.Threshold)
		} else if m.Threshold != 0 && m.Threshold < cd.PrepareThreshold {
			bad(fmt.Sprintf("models[%d].threshold", i), "%g is below %s (entry %q): background summaries would start after condensing; "+
				"leave condense.prepare_threshold unset (each model's threshold - 0.1)", m.Threshold, val("condense.prepare_threshold", cd.PrepareThreshold), m.Match)
		}
	}
	return errs
}

// IsRedisURL reports whether s is a redis:// or rediss:// URL with a host:
// what redis_url and redis_cluster_url take.
func IsRedisURL(s string) bool {
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "redis" || u.Scheme == "rediss") && u.Host != ""
}
