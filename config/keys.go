package config

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The keys table: every configuration key is one row of table below, and
// everything else about it — its flag (RegisterFlags), its environment
// variable (EnvName), its default (Defaults), whether it is a list, the
// range a number must lie in (Validate), its decoding (Load), the README
// table's check — comes from that row. A new key is a Config field plus
// one row.

// Size and count limits shared by several keys.
const (
	maxBytes  = 1 << 40    // 1 TiB: byte sizes
	maxTokens = 10_000_000 // 10M tokens: windows, chunks, budgets, savings
	maxCount  = 10_000_000 // counts of messages, outputs, requests
	day       = 24 * time.Hour
)

// Kind is the type of a key's value.
type Kind string

// The kinds of keys.
const (
	KindString   Kind = "string"
	KindBool     Kind = "bool"
	KindInt      Kind = "int"
	KindBytes    Kind = "bytes" // int64, a size in bytes
	KindFloat    Kind = "float"
	KindDuration Kind = "duration"
	KindList     Kind = "list" // strings; comma-separated in the environment
)

// describe says what a value of the kind looks like, for errors.
func (k Kind) describe() string {
	switch k {
	case KindBool:
		return "true or false"
	case KindInt:
		return "a whole number"
	case KindBytes:
		return "a whole number of bytes"
	case KindFloat:
		return "a number"
	case KindDuration:
		return "a duration with its unit (60s, 5m, 1h)"
	case KindList:
		return "a list of strings"
	}
	return "a string"
}

// Key describes one configuration key. Keys are read-only: Table returns
// copies.
type Key struct {
	// Name is the dotted YAML path: "condense.threshold".
	Name string
	// Flag is serve's command-line flag, without the dashes.
	Flag string
	// Usage is the flag's one-line help.
	Usage string
	// Kind is the value's type.
	Kind Kind
	// Default is the built-in value, of the field's Go type (string, bool,
	// int, int64, float64, time.Duration or []string).
	Default any
	// Min and Max bound a number, inclusive (a duration in nanoseconds);
	// unused for other kinds. Every number must also be finite.
	Min, Max float64
	// Required: the key has no default (Default is its zero value) and a
	// configuration without it is refused.
	Required bool

	// field points at the key's field in c.
	field func(c *Config) any
}

// Env is the environment variable that sets the key.
func (k Key) Env() string { return EnvName(k.Name) }

// List reports whether the key holds a list.
func (k Key) List() bool { return k.Kind == KindList }

// DefaultText is the default as README's Configuration table writes it:
// empty strings and lists as "empty" and "[]", other strings in
// backquotes, lists comma-separated, the rest as the flag prints it.
func (k Key) DefaultText() string {
	switch v := k.Default.(type) {
	case string:
		if k.Required {
			return "required"
		}
		if v == "" {
			return "empty"
		}
		return "`" + v + "`"
	case []string:
		if len(v) == 0 {
			return "[]"
		}
		return strings.Join(v, ", ")
	case float64:
		return strconv.FormatFloat(v, 'g', -1, 64)
	case time.Duration:
		return shortDuration(v)
	}
	return fmt.Sprint(k.Default)
}

// shortDuration writes d without zero trailing units: 1m, not 1m0s.
func shortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// RangeText is a number's range as an error names it: "[0, 1]", with
// durations and sizes written as such.
func (k Key) RangeText() string {
	f := func(x float64) string {
		switch k.Kind {
		case KindDuration:
			return shortDuration(time.Duration(x))
		case KindFloat:
			return strconv.FormatFloat(x, 'g', -1, 64)
		}
		return strconv.FormatFloat(x, 'f', -1, 64)
	}
	return "[" + f(k.Min) + ", " + f(k.Max) + "]"
}

// checkRange reports a number outside [Min, Max] or not finite. Whole
// numbers (ints, sizes, durations) are compared as integers, so a value
// one past a bound above 2^53 is still caught.
func (k Key) checkRange(v any) error {
	var in bool
	switch n := v.(type) {
	case int:
		in = int64(n) >= int64(k.Min) && int64(n) <= int64(k.Max)
	case int64:
		in = n >= int64(k.Min) && n <= int64(k.Max)
	case time.Duration:
		in = int64(n) >= int64(k.Min) && int64(n) <= int64(k.Max)
	case float64:
		if math.IsNaN(n) || math.IsInf(n, 0) {
			return fmt.Errorf("%s: must be a finite number in %s, got %v", k.Name, k.RangeText(), v)
		}
		in = n >= k.Min && n <= k.Max
	default:
		return nil
	}
	if !in {
		hint := ""
		if d, ok := v.(time.Duration); ok && d > 0 && d < time.Microsecond {
			hint = " (a duration needs its unit: 60s, 5m)"
		}
		return fmt.Errorf("%s: must be in %s, got %v%s", k.Name, k.RangeText(), v, hint)
	}
	return nil
}

// Row constructors: each ties a default to a field of the same type.

func strKey(name, flag string, def string, field func(*Config) *string, usage string) Key {
	return Key{Name: name, Flag: flag, Usage: usage, Kind: KindString, Default: def, field: func(c *Config) any { return field(c) }}
}

func boolKey(name, flag string, def bool, field func(*Config) *bool, usage string) Key {
	return Key{Name: name, Flag: flag, Usage: usage, Kind: KindBool, Default: def, field: func(c *Config) any { return field(c) }}
}

func intKey(name, flag string, def, lo, hi int, field func(*Config) *int, usage string) Key {
	return Key{Name: name, Flag: flag, Usage: usage, Kind: KindInt, Default: def, Min: float64(lo), Max: float64(hi), field: func(c *Config) any { return field(c) }}
}

func bytesKey(name, flag string, def, lo, hi int64, field func(*Config) *int64, usage string) Key {
	return Key{Name: name, Flag: flag, Usage: usage, Kind: KindBytes, Default: def, Min: float64(lo), Max: float64(hi), field: func(c *Config) any { return field(c) }}
}

func floatKey(name, flag string, def, lo, hi float64, field func(*Config) *float64, usage string) Key {
	return Key{Name: name, Flag: flag, Usage: usage, Kind: KindFloat, Default: def, Min: lo, Max: hi, field: func(c *Config) any { return field(c) }}
}

func durKey(name, flag string, def, lo, hi time.Duration, field func(*Config) *time.Duration, usage string) Key {
	return Key{Name: name, Flag: flag, Usage: usage, Kind: KindDuration, Default: def, Min: float64(lo), Max: float64(hi), field: func(c *Config) any { return field(c) }}
}

func listKey(name, flag string, def []string, field func(*Config) *[]string, usage string) Key {
	return Key{Name: name, Flag: flag, Usage: usage, Kind: KindList, Default: def, field: func(c *Config) any { return field(c) }}
}

// required marks k required.
func required(k Key) Key {
	k.Required = true
	return k
}

// Modes are the condensing modes condense.mode accepts. The wiring's test
// checks they are the engine's (condense.Modes).
var Modes = []string{"auto", "full", "selective", "truncate", "off", "observe"}

// CredentialHeaders is scope_headers' default: the headers that carry a
// caller's API key. The wiring's test checks they are the proxy's
// (proxy.CredentialHeaders).
var CredentialHeaders = []string{"Authorization", "X-Api-Key", "Api-Key", "X-Litellm-Api-Key", "X-Goog-Api-Key"}

// table is every configuration key, in the order of serve --help and
// README's Configuration table.
var table = []Key{
	strKey("listen", "listen", "127.0.0.1:8080", func(c *Config) *string { return &c.Listen },
		"address to listen on (loopback only by default; 0.0.0.0:8080 or :8080: every interface)"),
	required(strKey("upstream", "upstream", "", func(c *Config) *string { return &c.Upstream },
		"upstream base URL (LiteLLM, a provider), required; the request path is appended")),
	strKey("redis_url", "redis", "", func(c *Config) *string { return &c.RedisURL },
		"Redis URL (redis://host:port/db); empty: in-memory cache"),
	strKey("redis_cluster_url", "redis-cluster", "", func(c *Config) *string { return &c.RedisClusterURL },
		"Redis Cluster URL (redis://host1:port1?addr=host2:port2&addr=host3:port3), instead of redis_url"),
	durKey("redis_timeout", "redis-timeout", 500*time.Millisecond, time.Millisecond, time.Minute, func(c *Config) *time.Duration { return &c.RedisTimeout },
		"bound of one Redis command (dial, read, write); slower counts as a failure"),
	intKey("redis_fail_threshold", "redis-fail-threshold", 3, 1, 1000, func(c *Config) *int { return &c.RedisFailThreshold },
		"consecutive failed Redis commands that take it for down (then served from memory)"),
	durKey("redis_probe_interval", "redis-probe-interval", time.Second, 10*time.Millisecond, time.Hour, func(c *Config) *time.Duration { return &c.RedisProbeInterval },
		"while Redis is down, how often one command tries it again"),
	bytesKey("cache_max_bytes", "cache-max-bytes", 256<<20, 1, maxBytes, func(c *Config) *int64 { return &c.CacheMaxBytes },
		"in-memory cache size in bytes"),
	bytesKey("originals_max_bytes", "originals-max-bytes", 128<<20, 1, maxBytes, func(c *Config) *int64 { return &c.OriginalsMaxBytes },
		"in-memory size of the condensed-away originals' store (without Redis)"),
	intKey("max_inflight_condense", "max-inflight-condense", 0, 0, 1_000_000, func(c *Config) *int { return &c.MaxInflightCondense },
		"requests read and condensed at once; past it forwarded unchanged after inflight_wait (0: 4 x GOMAXPROCS)"),
	durKey("inflight_wait", "inflight-wait", time.Second, time.Millisecond, 10*time.Minute, func(c *Config) *time.Duration { return &c.InflightWait },
		"how long a request waits for a place among max_inflight_condense"),
	strKey("scope_secret", "scope-secret", "", func(c *Config) *string { return &c.ScopeSecret },
		"secret keying caller scopes (prefer CONDENSE_SCOPE_SECRET; empty: shared through Redis, or random in memory)"),
	listKey("scope_headers", "scope-headers", CredentialHeaders, func(c *Config) *[]string { return &c.ScopeHeaders },
		"request headers whose values make the caller's scope"),
	bytesKey("max_body_bytes", "max-body-bytes", 64<<20, 1, maxBytes, func(c *Config) *int64 { return &c.MaxBodyBytes },
		"largest request body accepted"),
	bytesKey("max_decompressed_bytes", "max-decompressed-bytes", 128<<20, 1, maxBytes, func(c *Config) *int64 { return &c.MaxDecompressedBytes },
		"largest body after Content-Encoding is decoded (unset: at least max_body_bytes)"),
	intKey("max_request_messages", "max-request-messages", 100000, 0, maxCount, func(c *Config) *int { return &c.MaxRequestMessages },
		"largest number of messages (items) a request may have (0: no limit)"),
	intKey("default_context_window", "default-context-window", 128000, 1, maxTokens, func(c *Config) *int { return &c.DefaultContextWindow },
		"context window assumed for unknown models"),
	durKey("shutdown_grace", "shutdown-grace", 30*time.Second, 0, day, func(c *Config) *time.Duration { return &c.ShutdownGrace },
		"time in-flight requests get after SIGTERM"),
	durKey("upstream_connect_timeout", "upstream-connect-timeout", 10*time.Second, 0, time.Hour, func(c *Config) *time.Duration { return &c.UpstreamConnectTimeout },
		"dial timeout toward the upstream"),
	durKey("upstream_header_timeout", "upstream-header-timeout", 0, 0, day, func(c *Config) *time.Duration { return &c.UpstreamHeaderTimeout },
		"wait for upstream response headers (0: none)"),
	strKey("log_level", "log-level", "info", func(c *Config) *string { return &c.LogLevel },
		"debug | info | warn | error"),
	strKey("log_format", "log-format", "auto", func(c *Config) *string { return &c.LogFormat },
		"json | text | auto (text on a terminal)"),

	strKey("condense.mode", "mode", "auto", func(c *Config) *string { return &c.Condense.Mode },
		"default condense mode: "+strings.Join(Modes, " | ")),
	floatKey("condense.threshold", "threshold", 0, 0, 1, func(c *Config) *float64 { return &c.Condense.Threshold },
		"fraction of the window that triggers condensing, in [0.01, 1] (0: by each model's window, 0.6 from 64,000 tokens, 0.8 below)"),
	floatKey("condense.target", "target", 0, 0, 1, func(c *Config) *float64 { return &c.Condense.Target },
		"fraction of the window to condense down to; below threshold (0: 5/8 of each model's threshold, at most 0.5)"),
	floatKey("condense.prepare_threshold", "prepare-threshold", 0, 0, 1, func(c *Config) *float64 { return &c.Condense.PrepareThreshold },
		"fraction of the window that starts background summaries, at most threshold (0: each model's threshold - 0.1)"),
	intKey("condense.keep_recent_turns", "keep-recent-turns", 3, 1, 10_000, func(c *Config) *int { return &c.Condense.KeepRecentTurns },
		"recent steps always kept verbatim"),
	intKey("condense.chunk_tokens", "chunk-tokens", 12000, 256, maxTokens, func(c *Config) *int { return &c.Condense.ChunkTokens },
		"tokens per level-1 summary chunk"),
	intKey("condense.summary_budget_tokens", "summary-budget-tokens", 8000, 256, maxTokens, func(c *Config) *int { return &c.Condense.SummaryBudgetTokens },
		"summary tokens kept per level before folding upward; auto's cut summaries (and selective's window stand-ins) take at most this or an eighth of the window for what they say, and as much again for the facts they keep"),
	strKey("condense.summarizer", "summarizer", "llm", func(c *Config) *string { return &c.Condense.Summarizer },
		"llm | extractive"),
	strKey("condense.summary_model", "summary-model", "", func(c *Config) *string { return &c.Condense.SummaryModel },
		"model for summaries (empty: the request's model)"),
	strKey("condense.summary_api", "summary-api", "auto", func(c *Config) *string { return &c.Condense.SummaryAPI },
		"API summaries are asked in: auto (the request's own) | chat | messages | responses | gemini"),
	durKey("condense.summary_timeout", "summary-timeout", 60*time.Second, time.Millisecond, day, func(c *Config) *time.Duration { return &c.Condense.SummaryTimeout },
		"timeout of one summarizer call"),
	intKey("condense.summarizer_concurrency", "summarizer-concurrency", 8, 1, 10_000, func(c *Config) *int { return &c.Condense.SummarizerConcurrency },
		"summarizer calls in flight at once, per replica"),
	intKey("condense.max_summarizer_calls", "max-summarizer-calls", 16, 1, 100_000, func(c *Config) *int { return &c.Condense.MaxSummarizerCalls },
		"summarizer calls one request may make; a request that needs more makes none (extractive summaries)"),
	floatKey("condense.auto_llm_share", "auto-llm-share", 0.02, 0, 1, func(c *Config) *float64 { return &c.Condense.AutoLLMShare },
		"auto's LLM summaries of a conversation cost at most this share of its uncondensed bill so far; past it, extractive (0: never the LLM in auto)"),
	strKey("condense.stand_ins", "stand-ins", "summaries", func(c *Config) *string { return &c.Condense.StandIns },
		"what stands for the steps auto's cut omits: summaries (the task, error lines, decisions, paths, recall ids) | notes (what was there and the recall ids, no summary; needs memory.recall_tool)"),
	boolKey("condense.defer", "defer", false, func(c *Config) *bool { return &c.Condense.Defer },
		"deprecated, no effect (a warning at start when set): it forwarded a request over the threshold as received while condensing it would not pay, and changed no measured bill"),
	boolKey("condense.cold_turns", "cold-turns", true, func(c *Config) *bool { return &c.Condense.ColdTurns },
		"on a request over the threshold after its conversation was idle longer than the model's cache_ttl (its prefix is written again anyway), move its cut, fold or digests now, at least to the target; the warm requests after it keep its prefix"),
	floatKey("condense.holdout_share", "holdout-share", 0, 0, 1, func(c *Config) *float64 { return &c.Condense.HoldoutShare },
		"share of conversations forwarded as received (the holdout arm, chosen by a hash of caller and conversation) while the page compares their bill with the condensed ones' (0: none)"),
	durKey("condense.max_wait", "max-wait", 30*time.Second, time.Millisecond, day, func(c *Config) *time.Duration { return &c.Condense.MaxWait },
		"longest a request waits for summaries before going on with what is ready"),
	strKey("condense.prompt_file", "prompt-file", "", func(c *Config) *string { return &c.Condense.PromptFile },
		"file replacing the built-in summary prompt"),
	intKey("condense.max_messages", "max-messages", 0, 0, maxCount, func(c *Config) *int { return &c.Condense.MaxMessages },
		"condense above this many messages (0: off)"),
	durKey("condense.originals_ttl", "originals-ttl", 24*time.Hour, time.Second, 365*day, func(c *Config) *time.Duration { return &c.Condense.OriginalsTTL },
		"how long condensed-away originals stay retrievable"),

	boolKey("selective.enabled", "selective", true, func(c *Config) *bool { return &c.Selective.Enabled },
		"enable selective condensing (feature flag)"),
	intKey("selective.keep_recent_tool_outputs", "keep-recent-tool-outputs", 5, 0, maxCount, func(c *Config) *int { return &c.Selective.KeepRecentToolOutputs },
		"newest tool outputs never digested"),
	intKey("selective.min_tool_output_tokens", "min-tool-output-tokens", 500, 0, maxTokens, func(c *Config) *int { return &c.Selective.MinToolOutputTokens },
		"smallest tool output that is digested"),
	listKey("selective.exclude_tools", "exclude-tools", []string{}, func(c *Config) *[]string { return &c.Selective.ExcludeTools },
		"tools whose outputs are never digested"),
	boolKey("selective.clear_tool_inputs", "clear-tool-inputs", false, func(c *Config) *bool { return &c.Selective.ClearToolInputs },
		"also shorten very large old tool-call arguments"),
	intKey("selective.min_savings_tokens", "min-savings-tokens", 0, 0, maxTokens, func(c *Config) *int { return &c.Selective.MinSavingsTokens },
		"how far the digest frontier moves at once, tokens (0: the stride the cost model chooses)"),
	strKey("selective.summarizer", "selective-summarizer", "extractive", func(c *Config) *string { return &c.Selective.Summarizer },
		"extractive | llm: how tool outputs are digested"),
	boolKey("selective.eager", "eager", false, func(c *Config) *bool { return &c.Selective.Eager },
		"digest old tool outputs from the first request on, below the threshold too (selective and auto)"),
	boolKey("selective.digests_first", "digests-first", false, func(c *Config) *bool { return &c.Selective.DigestsFirst },
		"at a conversation's first condensation, digests alone even when they would not pay before the window must come (keeps older steps longer, bills more)"),
	intKey("selective.llm_digest_input_bytes", "llm-digest-input-bytes", 24000, 1000, maxBytes, func(c *Config) *int { return &c.Selective.LLMDigestInputBytes },
		"largest tool output an LLM digest is asked about (its middle is cut)"),
	intKey("selective.llm_digest_max_tokens", "llm-digest-max-tokens", 600, 50, 100_000, func(c *Config) *int { return &c.Selective.LLMDigestMaxTokens },
		"bound of one LLM digest"),

	boolKey("anthropic.strip_context_management", "strip-context-management", false, func(c *Config) *bool { return &c.Anthropic.StripContextManagement },
		"remove Anthropic's context management (its field and its beta) from Messages requests, for upstreams that refuse them"),

	listKey("auth.keys", "auth-keys", []string{}, func(c *Config) *[]string { return &c.Auth.Keys },
		"accepted inbound API keys (empty: no inbound auth)"),

	boolKey("ui.enabled", "ui", true, func(c *Config) *bool { return &c.UI.Enabled },
		"serve the live page at /ui and keep its record of recent requests"),
	intKey("ui.max_conversations", "ui-max-conversations", 100, 0, 1_000_000, func(c *Config) *int { return &c.UI.MaxConversations },
		"conversations the live page keeps"),
	intKey("ui.max_requests_per_conversation", "ui-max-requests-per-conversation", 500, 0, 1_000_000, func(c *Config) *int { return &c.UI.MaxRequestsPerConversation },
		"requests the live page keeps per conversation"),
	listKey("ui.keys", "ui-keys", []string{}, func(c *Config) *[]string { return &c.UI.Keys },
		"admin keys of the live page: they see every caller's conversations"),

	boolKey("keepalive.enabled", "keepalive", false, func(c *Config) *bool { return &c.KeepAlive.Enabled },
		"ping idle conversations to keep the provider's prompt cache warm (paid with the caller's key)"),
	listKey("keepalive.models", "keepalive-models", []string{}, func(c *Config) *[]string { return &c.KeepAlive.Models },
		"model globs kept warm (empty: every model)"),
	intKey("keepalive.max_pings", "keepalive-max-pings", 2, 1, 100, func(c *Config) *int { return &c.KeepAlive.MaxPings },
		"pings at most per idle gap of a conversation (fewer when letting the cache expire costs less: a cold turn condensed)"),
	intKey("keepalive.min_prefix_tokens", "keepalive-min-prefix-tokens", 4096, 0, maxTokens, func(c *Config) *int { return &c.KeepAlive.MinPrefixTokens },
		"smallest request (tokens) kept warm"),

	boolKey("litellm.model_info", "litellm-model-info", true, func(c *Config) *bool { return &c.LiteLLM.ModelInfo },
		"read windows and prices from the upstream's /model/info when it is LiteLLM (at start and every litellm.refresh; an alias there overrides the built-in registry, not models:)"),
	strKey("litellm.key", "litellm-key", "", func(c *Config) *string { return &c.LiteLLM.Key },
		"key for LiteLLM's /model/info (prefer CONDENSE_LITELLM_KEY; empty: asked without one, and a 401/403 stops the asking)"),
	durKey("litellm.refresh", "litellm-refresh", 10*time.Minute, 0, day, func(c *Config) *time.Duration { return &c.LiteLLM.Refresh },
		"how often /model/info is read again (0: only at start)"),

	boolKey("memory.recall_tool", "recall-tool", true, func(c *Config) *bool { return &c.Memory.RecallTool },
		"add condense_recall to every request of a condensed conversation and answer it from the conversation's memory"),
	boolKey("memory.relevant_context", "relevant-context", false, func(c *Config) *bool { return &c.Memory.RelevantContext },
		"put the memory items most relevant to the conversation's current focus beside its summaries, when the cut moves"),
	intKey("memory.max_recall_rounds", "max-recall-rounds", 3, 1, 20, func(c *Config) *int { return &c.Memory.MaxRecallRounds },
		"rounds of recall calls answered for one answer"),
	intKey("memory.max_recall_calls", "max-recall-calls", 4, 1, 64, func(c *Config) *int { return &c.Memory.MaxRecallCalls },
		"recall calls of one answer that are answered (the rest are left out, and the model is told so)"),
	intKey("memory.recall_budget_tokens", "recall-budget-tokens", 4000, 100, maxTokens, func(c *Config) *int { return &c.Memory.RecallBudgetTokens },
		"tokens of one recall answer and of the relevant-context block"),
	strKey("memory.embedding_model", "embedding-model", "", func(c *Config) *string { return &c.Memory.EmbeddingModel },
		"embedding model asked of the upstream's /v1/embeddings for hybrid search (empty: BM25 alone)"),
	bytesKey("memory.max_conversation_bytes", "memory-max-conversation-bytes", 8<<20, 1<<10, maxBytes, func(c *Config) *int64 { return &c.Memory.MaxConversationBytes },
		"text one conversation's memory keeps (unset: at most memory.max_bytes)"),
	bytesKey("memory.max_bytes", "memory-max-bytes", 128<<20, 1<<20, maxBytes, func(c *Config) *int64 { return &c.Memory.MaxBytes },
		"in-memory size of the conversations' memory, without Redis"),
}

// Table returns every configuration key, in the order serve --help and
// README list them.
func Table() []Key {
	out := slices.Clone(table)
	for i := range out {
		if l, ok := out[i].Default.([]string); ok {
			out[i].Default = slices.Clone(l)
		}
	}
	return out
}

// Lookup returns the key named name.
func Lookup(name string) (Key, bool) {
	for _, k := range table {
		if k.Name == name {
			return k, true
		}
	}
	return Key{}, false
}

// Keys lists every configuration key (dotted), sorted.
func Keys() []string {
	out := make([]string, 0, len(table))
	for _, k := range table {
		out = append(out, k.Name)
	}
	slices.Sort(out)
	return out
}

// EnvName is the environment variable that sets key: CONDENSE_ and the
// key in upper case, dots and dashes as underscores.
func EnvName(key string) string {
	return EnvPrefix + "_" + strings.ToUpper(strings.NewReplacer(".", "_", "-", "_").Replace(key))
}

// set stores v, of the key's Go type, in c.
func (k Key) set(c *Config, v any) {
	switch p := k.field(c).(type) {
	case *string:
		*p = v.(string)
	case *bool:
		*p = v.(bool)
	case *int:
		*p = v.(int)
	case *int64:
		*p = v.(int64)
	case *float64:
		*p = v.(float64)
	case *time.Duration:
		*p = v.(time.Duration)
	case *[]string:
		*p = slices.Clone(v.([]string))
	}
}

// get returns the key's value in c.
func (k Key) get(c *Config) any {
	switch p := k.field(c).(type) {
	case *string:
		return *p
	case *bool:
		return *p
	case *int:
		return *p
	case *int64:
		return *p
	case *float64:
		return *p
	case *time.Duration:
		return *p
	case *[]string:
		return *p
	}
	panic("config: key " + k.Name + " has a field of an unsupported type")
}
