package config

import (
	"errors"
	"fmt"
	"path"
	"strings"
	"sync"
	"time"
)

// ModelConfig describes one model family. In YAML it is an entry of models:.
type ModelConfig struct {
	// Match is a glob (path.Match syntax, case-insensitive) tried against
	// the model name with and without its provider prefix ("openai/",
	// "openrouter/anthropic/").
	Match string `mapstructure:"match"`
	// ContextWindow is the maximum number of input tokens.
	ContextWindow int `mapstructure:"context_window"`
	// MaxOutputTokens is the model's output limit; 0: unknown.
	MaxOutputTokens int `mapstructure:"max_output_tokens"`
	// Threshold overrides condense.threshold for this model; 0: the global one.
	Threshold float64 `mapstructure:"threshold"`
	// Encoding is o200k_base or cl100k_base; empty: o200k_base.
	Encoding string `mapstructure:"encoding"`
	// SafetyFactor multiplies token counts for models whose own tokenizer
	// is not tiktoken (counts are approximations); 0: 1.0.
	SafetyFactor float64 `mapstructure:"safety_factor"`
	// Reasoning marks a reasoning model (OpenAI's o-series and gpt-5
	// families): its chat requests take max_completion_tokens, not
	// max_tokens, and no temperature but the default, so the summarizer
	// asks it that way. Unset: what the built-in registry says of the
	// model name (false for names it does not know).
	Reasoning *bool `mapstructure:"reasoning"`
	// ThinkingBinding marks a model that binds each thinking block to its
	// prefix (preserved thinking: Claude Fable 5.1 and later), so a
	// condensed Messages request keeping thinking blocks asks the API to
	// drop the stale ones (block_binding drop_block) instead of refusing.
	// Unset: what the built-in registry says of the model name.
	ThinkingBinding *bool `mapstructure:"thinking_binding"`
	// CacheRead is the price of a prompt-cache read as a fraction of the
	// input price (Anthropic 0.1, gpt-4o 0.5); 0: the family's default.
	CacheRead float64 `mapstructure:"cache_read"`
	// CacheWrite is the price of input written to the prompt cache as a
	// multiple of the input price (Anthropic 1.25, OpenAI 1.0); 0: the
	// family's default.
	CacheWrite float64 `mapstructure:"cache_write"`
	// CacheTTL is how long the provider keeps an idle prompt cache
	// (Anthropic 5m; OpenAI's is automatic, 5–10 minutes); 0: the
	// family's default.
	CacheTTL time.Duration `mapstructure:"cache_ttl"`
}

// Limits of a model entry's numbers.
const (
	maxSafetyFactor = 3
	maxCacheWrite   = 4
	maxCacheTTL     = 24 * time.Hour
)

// validate reports every bad field of the entry.
func (m ModelConfig) validate() error { return errors.Join(m.problems()...) }

// problems lists every bad field of the entry. Numbers are checked with
// comparisons NaN fails, so NaN is refused with the rest.
func (m ModelConfig) problems() []error {
	var errs []error
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	if m.Match == "" {
		bad("match: must not be empty")
	} else if _, err := path.Match(m.Match, ""); err != nil {
		bad("match: bad glob %q: %w", m.Match, err)
	}
	if !(m.ContextWindow >= 0 && m.ContextWindow <= maxTokens) {
		bad("context_window: must be in [0, %d] (0 for default_context_window), got %d", maxTokens, m.ContextWindow)
	}
	if !(m.MaxOutputTokens >= 0 && m.MaxOutputTokens <= maxTokens) {
		bad("max_output_tokens: must be in [0, %d], got %d", maxTokens, m.MaxOutputTokens)
	}
	if !(m.Threshold >= 0 && m.Threshold <= 1) {
		bad("threshold: must be in (0,1] (or 0 for the global one), got %g", m.Threshold)
	}
	switch m.Encoding {
	case "", EncodingO200k, EncodingCL100k:
	default:
		bad("encoding: %q is not %s or %s", m.Encoding, EncodingO200k, EncodingCL100k)
	}
	if !(m.SafetyFactor == 0 || m.SafetyFactor >= 1 && m.SafetyFactor <= maxSafetyFactor) {
		bad("safety_factor: must be in [1,%d] (or 0 for 1.0), got %g", maxSafetyFactor, m.SafetyFactor)
	}
	if !(m.CacheRead >= 0 && m.CacheRead <= 1) {
		bad("cache_read: must be in [0,1] (0 for the family's default), got %g", m.CacheRead)
	}
	if !(m.CacheWrite == 0 || m.CacheWrite >= 1 && m.CacheWrite <= maxCacheWrite) {
		bad("cache_write: must be in [1,%d] (or 0 for the family's default), got %g", maxCacheWrite, m.CacheWrite)
	}
	if !(m.CacheTTL >= 0 && m.CacheTTL <= maxCacheTTL) {
		bad("cache_ttl: must be in [0,24h] (0 for the family's default), got %s", m.CacheTTL)
	}
	return errs
}

// Tokenizer encodings.
const (
	EncodingO200k  = "o200k_base"
	EncodingCL100k = "cl100k_base"
)

var yes = true

// builtinModels is the registry shipped with the proxy, most specific first.
// Windows are input limits as the providers document them.
var builtinModels = []ModelConfig{
	{Match: "gpt-4o-mini*", ContextWindow: 128000, MaxOutputTokens: 16384, Encoding: EncodingO200k},
	{Match: "gpt-4o*", ContextWindow: 128000, MaxOutputTokens: 16384, Encoding: EncodingO200k},
	{Match: "chatgpt-4o*", ContextWindow: 128000, MaxOutputTokens: 16384, Encoding: EncodingO200k},
	{Match: "gpt-4.1*", ContextWindow: 1047576, MaxOutputTokens: 32768, Encoding: EncodingO200k},
	{Match: "gpt-5*", ContextWindow: 272000, MaxOutputTokens: 128000, Encoding: EncodingO200k, Reasoning: &yes},
	{Match: "o3*", ContextWindow: 200000, MaxOutputTokens: 100000, Encoding: EncodingO200k, Reasoning: &yes},
	{Match: "o4-mini*", ContextWindow: 200000, MaxOutputTokens: 100000, Encoding: EncodingO200k, Reasoning: &yes},
	{Match: "o1*", ContextWindow: 200000, MaxOutputTokens: 100000, Encoding: EncodingO200k, Reasoning: &yes},
	{Match: "gpt-4-turbo*", ContextWindow: 128000, MaxOutputTokens: 4096, Encoding: EncodingCL100k},
	{Match: "gpt-4-32k*", ContextWindow: 32768, MaxOutputTokens: 4096, Encoding: EncodingCL100k},
	{Match: "gpt-4*", ContextWindow: 8192, MaxOutputTokens: 4096, Encoding: EncodingCL100k},
	{Match: "gpt-3.5*", ContextWindow: 16385, MaxOutputTokens: 4096, Encoding: EncodingCL100k},
	{Match: "*claude-fable*", ContextWindow: 200000, MaxOutputTokens: 8192, Encoding: EncodingO200k, SafetyFactor: 1.2, ThinkingBinding: &yes},
	{Match: "claude-opus-4*", ContextWindow: 200000, MaxOutputTokens: 32000, Encoding: EncodingO200k, SafetyFactor: 1.2},
	{Match: "claude-*-4*", ContextWindow: 200000, MaxOutputTokens: 64000, Encoding: EncodingO200k, SafetyFactor: 1.2},
	{Match: "claude-*", ContextWindow: 200000, MaxOutputTokens: 8192, Encoding: EncodingO200k, SafetyFactor: 1.2},
	{Match: "*claude-*", ContextWindow: 200000, MaxOutputTokens: 8192, Encoding: EncodingO200k, SafetyFactor: 1.2},
	{Match: "gemini-2.5*", ContextWindow: 1048576, MaxOutputTokens: 65536, Encoding: EncodingO200k, SafetyFactor: 1.1},
	{Match: "deepseek*", ContextWindow: 128000, MaxOutputTokens: 8192, Encoding: EncodingO200k, SafetyFactor: 1.1},
	{Match: "qwen3-coder*", ContextWindow: 262144, MaxOutputTokens: 65536, Encoding: EncodingO200k, SafetyFactor: 1.1},
	{Match: "*llama*", ContextWindow: 128000, MaxOutputTokens: 4096, Encoding: EncodingO200k, SafetyFactor: 1.1},
}

// ModelInfo is what the registry says of one model.
type ModelInfo struct {
	Name            string  // the name looked up
	Match           string  // the glob that matched; "" for the default
	Known           bool    // false: the default window was used
	ContextWindow   int     // input tokens
	MaxOutputTokens int     // 0: unknown
	Threshold       float64 // fraction of ContextWindow that triggers condensing
	Encoding        string  // tokenizer encoding
	SafetyFactor    float64 // >= 1
	// Reasoning: the model takes max_completion_tokens and only the
	// default temperature (see ModelConfig.Reasoning).
	Reasoning bool
	// ThinkingBinding: the model binds thinking blocks to their prefix
	// (see ModelConfig.ThinkingBinding).
	ThinkingBinding bool
	// The prompt cache's prices and lifetime (see ModelConfig): never
	// zero.
	CacheRead, CacheWrite float64
	CacheTTL              time.Duration
}

// cachePrices is a provider family's prompt-cache pricing.
type cachePrices struct {
	read, write float64
	ttl         time.Duration
}

// familyCache gives the prompt-cache pricing of a model family by name,
// as the providers publish it (2026): Anthropic reads at 0.1 and writes
// at 1.25 with a 5-minute cache; OpenAI caches automatically (no write
// premium, 5–10 minutes idle) and reads at 0.5 (gpt-4o), 0.25 (gpt-4.1,
// o-series) or 0.1 (gpt-5); Gemini's implicit cache reads at 0.25;
// DeepSeek's at 0.1. Unknown families get Anthropic's, the dearest to
// bust: a planner that assumes it edits cached history least.
func familyCache(bare string) cachePrices {
	const fiveMin = 5 * time.Minute
	switch {
	case strings.Contains(bare, "claude"):
		return cachePrices{0.1, 1.25, fiveMin}
	case strings.HasPrefix(bare, "gpt-5"):
		return cachePrices{0.1, 1, fiveMin}
	case strings.HasPrefix(bare, "gpt-4.1"), strings.HasPrefix(bare, "o1"), strings.HasPrefix(bare, "o3"), strings.HasPrefix(bare, "o4"):
		return cachePrices{0.25, 1, fiveMin}
	case strings.HasPrefix(bare, "gpt-"), strings.HasPrefix(bare, "chatgpt-"):
		return cachePrices{0.5, 1, fiveMin}
	case strings.HasPrefix(bare, "gemini"):
		return cachePrices{0.25, 1, fiveMin}
	case strings.HasPrefix(bare, "deepseek"):
		return cachePrices{0.1, 1, fiveMin}
	}
	return cachePrices{0.1, 1.25, fiveMin}
}

// withCache fills mi's prompt-cache prices from e where set, else from
// the family's defaults.
func withCache(mi ModelInfo, bare string, e ModelConfig) ModelInfo {
	fam := familyCache(bare)
	mi.CacheRead, mi.CacheWrite, mi.CacheTTL = fam.read, fam.write, fam.ttl
	if e.CacheRead > 0 {
		mi.CacheRead = e.CacheRead
	}
	if e.CacheWrite > 0 {
		mi.CacheWrite = e.CacheWrite
	}
	if e.CacheTTL > 0 {
		mi.CacheTTL = e.CacheTTL
	}
	return mi
}

// Registry resolves model names. Safe for concurrent use.
type Registry struct {
	entries          []ModelConfig // config entries first, then built-ins
	defaultWindow    int
	defaultThreshold float64
	onUnknown        func(model string)

	mu      sync.Mutex
	unknown map[string]bool // models already reported unknown
	tooMany bool            // TooManyUnknown reported
}

// NewRegistry builds the registry for c. onUnknown, if not nil, is called
// once per unknown model name (for a log line).
func NewRegistry(c *Config, onUnknown func(model string)) *Registry {
	entries := make([]ModelConfig, 0, len(c.Models)+len(builtinModels))
	entries = append(entries, c.Models...)
	entries = append(entries, builtinModels...)
	return &Registry{
		entries:          entries,
		defaultWindow:    c.DefaultContextWindow,
		defaultThreshold: c.Condense.Threshold,
		onUnknown:        onUnknown,
		unknown:          make(map[string]bool),
	}
}

// StripProvider removes routing prefixes: "openrouter/anthropic/claude-x"
// becomes "claude-x".
func StripProvider(model string) string {
	if i := strings.LastIndexByte(model, '/'); i >= 0 {
		return model[i+1:]
	}
	return model
}

// Bounds of the registry's look-ups: a longer name is no model's (it is
// not matched against the globs, which would cost a lot of CPU on a
// hostile name), and past maxWarned names the unknown ones are no longer
// reported one by one.
const (
	MaxModelName = 256
	maxWarned    = 1000
)

// TooManyUnknown is what onUnknown is told, once, when more than
// maxWarned distinct unknown model names were seen: later ones are not
// reported.
const TooManyUnknown = "(more than 1000 unknown model names; no more are reported)"

// Lookup returns what the registry knows of model. Unknown models get the
// default window; the first lookup of each is reported to onUnknown (the
// first maxWarned of them, then TooManyUnknown once).
func (r *Registry) Lookup(model string) ModelInfo {
	full := strings.ToLower(strings.TrimSpace(model))
	bare := StripProvider(full)
	if len(full) <= MaxModelName {
		for _, e := range r.entries {
			if matches(e.Match, full, bare) {
				return r.info(model, full, bare, e)
			}
		}
	} else {
		full, bare = full[:MaxModelName], ""
	}
	r.mu.Lock()
	report := ""
	if !r.unknown[full] {
		switch {
		case len(r.unknown) < maxWarned:
			r.unknown[full] = true
			report = model
		case !r.tooMany:
			r.tooMany = true
			report = TooManyUnknown
		}
	}
	r.mu.Unlock()
	if report != "" && r.onUnknown != nil {
		r.onUnknown(report)
	}
	return withCache(ModelInfo{
		Name:            model,
		ContextWindow:   r.defaultWindow,
		Threshold:       r.defaultThreshold,
		Encoding:        EncodingO200k,
		SafetyFactor:    1.1,
		Reasoning:       builtinFlag(full, bare, reasoningOf),
		ThinkingBinding: builtinFlag(full, bare, thinkingBindingOf),
	}, bare, ModelConfig{})
}

func reasoningOf(e ModelConfig) *bool       { return e.Reasoning }
func thinkingBindingOf(e ModelConfig) *bool { return e.ThinkingBinding }

// flag is what entry e says of a per-model flag (of reads it), else what
// the first built-in entry matching the name says; false when none does.
func flag(e ModelConfig, full, bare string, of func(ModelConfig) *bool) bool {
	if v := of(e); v != nil {
		return *v
	}
	return builtinFlag(full, bare, of)
}

// builtinFlag is what the first built-in entry matching the name says
// of a per-model flag.
func builtinFlag(full, bare string, of func(ModelConfig) *bool) bool {
	for _, e := range builtinModels {
		if matches(e.Match, full, bare) {
			v := of(e)
			return v != nil && *v
		}
	}
	return false
}

// MatchModel reports whether model matches glob the way models[].match
// does: case-insensitive, tried on the name with and without its provider
// prefix.
func MatchModel(glob, model string) bool {
	full := strings.ToLower(strings.TrimSpace(model))
	return matches(glob, full, StripProvider(full))
}

// matches reports whether glob (case-insensitive) matches the name with
// or without its provider prefix; full and bare are lower-case.
func matches(glob, full, bare string) bool {
	pat := strings.ToLower(glob)
	if ok, _ := path.Match(pat, bare); ok {
		return true
	}
	ok, _ := path.Match(pat, full)
	return ok
}

func (r *Registry) info(model, full, bare string, e ModelConfig) ModelInfo {
	mi := ModelInfo{
		Name:            model,
		Match:           e.Match,
		Known:           true,
		ContextWindow:   e.ContextWindow,
		MaxOutputTokens: e.MaxOutputTokens,
		Threshold:       e.Threshold,
		Encoding:        e.Encoding,
		SafetyFactor:    e.SafetyFactor,
	}
	if mi.ContextWindow == 0 {
		mi.ContextWindow = r.defaultWindow
	}
	if mi.Threshold == 0 {
		mi.Threshold = r.defaultThreshold
	}
	if mi.Encoding == "" {
		mi.Encoding = EncodingO200k
	}
	if mi.SafetyFactor == 0 {
		mi.SafetyFactor = 1
	}
	mi.Reasoning = flag(e, full, bare, reasoningOf)
	mi.ThinkingBinding = flag(e, full, bare, thinkingBindingOf)
	return withCache(mi, bare, e)
}
