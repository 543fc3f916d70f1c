package config

import (
	"errors"
	"fmt"
	"path"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
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
	// (Anthropic 5m or 1h; OpenAI's is automatic, 5–10 minutes, and a
	// fixed 30 minutes from GPT-5.6 on); 0: the family's default. It also
	// picks the family's write price for that lifetime when CacheWrite is
	// not set (Anthropic: 1.25 for 5m, 2 for 1h).
	CacheTTL time.Duration `mapstructure:"cache_ttl"`
	// MinCachedPrefix is the shortest prompt (tokens) the provider
	// caches (Anthropic 1024, 2048 for Haiku; OpenAI 1024); 0: the
	// family's default.
	MinCachedPrefix int `mapstructure:"min_cached_prefix"`
	// InputPricePerMTok is the model's input price in USD per million
	// tokens, for showing money in dollars; 0: the family's default
	// (unknown for families without a published price).
	InputPricePerMTok float64 `mapstructure:"input_price_per_mtok"`
	// OutputPrice is the model's output price as a multiple of its input
	// price (Anthropic 5, gpt-5 8, gpt-4o 4, DeepSeek 1.5): what the
	// planner prices the summaries the model writes at; 0: the family's
	// default.
	OutputPrice float64 `mapstructure:"output_price"`
}

// Limits of a model entry's numbers.
const (
	maxSafetyFactor = 3
	maxCacheWrite   = 4
	maxCacheTTL     = 24 * time.Hour
	// maxInputPrice bounds input_price_per_mtok (USD per million tokens):
	// the dearest published model is well below it.
	maxInputPrice = 1000
	// maxOutputPrice bounds output_price (a multiple of the input
	// price): the providers' are 1.5 to 8.
	maxOutputPrice = 100
)

// modelKey is the config key of ModelConfig's field, as its tag spells
// it: a key that is also a wire format's field name (max_output_tokens)
// is spelled once, there; only the codecs spell wire names in strings.
func modelKey(field string) string {
	f, _ := reflect.TypeOf(ModelConfig{}).FieldByName(field)
	return f.Tag.Get("mapstructure")
}

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
		bad("%s: must be in [0, %d], got %d", modelKey("MaxOutputTokens"), maxTokens, m.MaxOutputTokens)
	}
	if !(m.Threshold == 0 || m.Threshold >= minFraction && m.Threshold <= 1) {
		bad("threshold: must be in [%g,1] (or 0 for condense.threshold), got %g", minFraction, m.Threshold)
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
	if !(m.MinCachedPrefix >= 0 && m.MinCachedPrefix <= maxTokens) {
		bad("min_cached_prefix: must be in [0, %d] (0 for the family's default), got %d", maxTokens, m.MinCachedPrefix)
	}
	if !(m.InputPricePerMTok >= 0 && m.InputPricePerMTok <= maxInputPrice) {
		bad("input_price_per_mtok: must be in [0, %d] USD (0 for the family's default), got %g", maxInputPrice, m.InputPricePerMTok)
	}
	if !(m.OutputPrice >= 0 && m.OutputPrice <= maxOutputPrice) {
		bad("output_price: must be in [0, %d] (a multiple of the input price; 0 for the family's default), got %g", maxOutputPrice, m.OutputPrice)
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
	{Match: "gemini-3*", ContextWindow: 1048576, MaxOutputTokens: 65536, Encoding: EncodingO200k, SafetyFactor: 1.1, Reasoning: &yes},
	{Match: "gemini-2.5*", ContextWindow: 1048576, MaxOutputTokens: 65536, Encoding: EncodingO200k, SafetyFactor: 1.1},
	{Match: "gemini-2.0*", ContextWindow: 1048576, MaxOutputTokens: 8192, Encoding: EncodingO200k, SafetyFactor: 1.1},
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
	// CacheWrite1h is the price of input written to the cache for an
	// hour (Anthropic's 1-hour tier, 2×), for pricing the 1-hour writes
	// an answer's usage reports: the family's 1-hour tier, never below
	// CacheWrite.
	CacheWrite1h float64
	// MinCachedPrefix is the shortest prompt the provider caches, in
	// tokens: never zero.
	MinCachedPrefix int
	// InputPricePerMTok is the input price in USD per million tokens;
	// 0: unknown (show no dollars).
	InputPricePerMTok float64
	// OutputPrice is the output price as a multiple of the input price
	// (see ModelConfig.OutputPrice): never zero.
	OutputPrice float64
	// Source says where the numbers come from: SourceConfig,
	// SourceGateway, SourceBuiltin or SourceDefault.
	Source string
}

// Sources of a ModelInfo.
const (
	SourceConfig  = "config"  // an entry of the config's models:
	SourceGateway = "litellm" // the upstream's /model/info (SetGateway)
	SourceBuiltin = "builtin" // the built-in registry
	SourceDefault = "default" // nothing knew the name: default_context_window
)

// cacheTier is one lifetime a provider's prompt cache can be written
// for, and the write's price as a multiple of the input price.
type cacheTier struct {
	ttl   time.Duration
	write float64
}

// family is a provider family's prompt-cache pricing and its output
// price.
type family struct {
	read      float64
	tiers     []cacheTier // shortest lifetime first; the first is the default
	minPrefix int         // shortest prompt cached, tokens
	output    float64     // the output price, a multiple of the input price
}

// The families' cache tiers.
var (
	anthropicTiers = []cacheTier{{5 * time.Minute, 1.25}, {time.Hour, 2}}
	// openAITiers: automatic caching, free writes, 5–10 idle minutes.
	openAITiers = []cacheTier{{5 * time.Minute, 1}}
	// openAI56Tiers: from GPT-5.6 on, writes at 1.25 and a fixed
	// 30-minute lifetime.
	openAI56Tiers = []cacheTier{{30 * time.Minute, 1.25}}
)

// familyOf gives the prompt-cache pricing of a model family by name, as
// the providers publish it (2026; sources in docs/configuration.md):
// Anthropic reads at 0.1 and writes at 1.25 for 5 minutes or 2 for an
// hour, caching prompts of 1024 tokens and more (2048 for Haiku); OpenAI
// from GPT-5.6 on reads at 0.1 and writes at 1.25 for a fixed 30
// minutes; older OpenAI models cache automatically (no write premium,
// 5–10 minutes idle) and read at 0.5 (gpt-4o, o1), 0.25 (gpt-4.1, o3,
// o4-mini) or 0.1 (gpt-5 before 5.6), all from 1024 tokens; Gemini's
// implicit cache (2.5 and later) reads at 0.1 ("a 90% discount on cached
// tokens", Google Cloud's context cache overview), writes at the input
// price, keeps no published lifetime (taken as OpenAI's automatic cache:
// minutes idle), from 1024 tokens for Flash and 4096 for Pro
// (ai.google.dev/gemini-api/docs/caching); DeepSeek's at 0.1.
//
// Output is priced, as a multiple of the input price: Anthropic 5 (Sonnet
// $3/$15, Opus $5/$25, Haiku $1/$5 per million tokens); OpenAI's GPT-5
// family 8 (gpt-5 $1.25/$10, 5.2 $1.75/$14, mini and nano alike), gpt-4o,
// gpt-4.1 and o1, o3, o4-mini 4 (gpt-4o $2.50/$10, gpt-4.1 $2/$8, o3 $2/$8);
// Gemini 8 (2.5 Pro $1.25/$10, 2.5 Flash $0.30/$2.50), 4 for Flash-Lite
// and 2.0 ($0.10/$0.40); DeepSeek 1.5 (V3.2 $0.28/$0.42).
//
// Unknown families get Anthropic's prices, output at 5 included: the
// dearest to bust, so a planner that assumes them edits cached history
// least.
func familyOf(bare string) family {
	const minPrefix = 1024
	switch {
	case strings.Contains(bare, "claude"):
		if strings.Contains(bare, "haiku") {
			return family{0.1, anthropicTiers, 2048, 5}
		}
		return family{0.1, anthropicTiers, minPrefix, 5}
	case openAI56(bare):
		return family{0.1, openAI56Tiers, minPrefix, 8}
	case strings.HasPrefix(bare, "gpt-5"):
		return family{0.1, openAITiers, minPrefix, 8}
	case strings.HasPrefix(bare, "o1"):
		return family{0.5, openAITiers, minPrefix, 4}
	case strings.HasPrefix(bare, "gpt-4.1"), strings.HasPrefix(bare, "o3"), strings.HasPrefix(bare, "o4"):
		return family{0.25, openAITiers, minPrefix, 4}
	case strings.HasPrefix(bare, "gpt-"), strings.HasPrefix(bare, "chatgpt-"):
		return family{0.5, openAITiers, minPrefix, 4}
	case strings.HasPrefix(bare, "gemini"):
		output := 8.0
		if strings.Contains(bare, "lite") || strings.HasPrefix(bare, "gemini-2.0") {
			output = 4
		}
		if strings.Contains(bare, "pro") {
			return family{0.1, openAITiers, 4096, output}
		}
		return family{0.1, openAITiers, minPrefix, output}
	case strings.HasPrefix(bare, "deepseek"):
		return family{0.1, openAITiers, minPrefix, 1.5}
	}
	return family{0.1, anthropicTiers, minPrefix, 5}
}

// openAI56 reports whether bare names an OpenAI model of the GPT-5.6
// family or later ("gpt-5.6", "gpt-5.7-mini", "gpt-6").
func openAI56(bare string) bool {
	rest, ok := strings.CutPrefix(bare, "gpt-")
	if !ok {
		return false
	}
	major, rest := leadingInt(rest)
	if major < 0 {
		return false
	}
	minor := 0
	if r, ok := strings.CutPrefix(rest, "."); ok {
		minor, _ = leadingInt(r)
	}
	return major > 5 || major == 5 && minor >= 6
}

// leadingInt reads the decimal number s starts with (at most 4 digits);
// -1 when it starts with none.
func leadingInt(s string) (int, string) {
	i := 0
	for i < len(s) && i < 4 && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	if i == 0 {
		return -1, s
	}
	n, _ := strconv.Atoi(s[:i])
	return n, s[i:]
}

// tier is the family's tier for a cache kept ttl (0: the default): the
// shortest that lasts at least ttl, else the longest.
func (f family) tier(ttl time.Duration) cacheTier {
	if ttl <= 0 {
		return f.tiers[0]
	}
	for _, t := range f.tiers {
		if t.ttl >= ttl {
			return t
		}
	}
	return f.tiers[len(f.tiers)-1]
}

// inputPrices are the input prices in USD per million tokens the
// providers publish (2026; sources in docs/configuration.md), most
// specific glob first. Families without a published price of their own
// (models served by many hosts at many prices: Llama, Qwen) are absent.
var inputPrices = []struct {
	match string
	usd   float64
}{
	{"claude-opus-4-1*", 15}, {"claude-opus-4-2*", 15}, {"claude-opus-4", 15}, {"claude-3-opus*", 15},
	{"claude-opus-4*", 5}, // Opus 4.5 and later
	{"claude-sonnet-4*", 3}, {"claude-3-7-sonnet*", 3}, {"claude-3-5-sonnet*", 3},
	{"claude-haiku-4*", 1}, {"claude-3-5-haiku*", 0.8}, {"claude-3-haiku*", 0.25},
	{"gpt-4o-mini*", 0.15}, {"gpt-4o*", 2.5}, {"chatgpt-4o*", 5},
	{"gpt-4.1-nano*", 0.1}, {"gpt-4.1-mini*", 0.4}, {"gpt-4.1*", 2},
	{"gpt-5-nano*", 0.05}, {"gpt-5-mini*", 0.25}, {"gpt-5-pro*", 15}, {"gpt-5", 1.25}, {"gpt-5-*", 1.25},
	{"gpt-5.1", 1.25}, {"gpt-5.1-*", 1.25}, {"gpt-5.2", 1.75}, {"gpt-5.2-*", 1.75},
	{"o1-mini*", 1.1}, {"o1*", 15}, {"o3-mini*", 1.1}, {"o3-pro*", 20}, {"o3*", 2}, {"o4-mini*", 1.1},
	{"gpt-4-turbo*", 10}, {"gpt-4-32k*", 60}, {"gpt-4*", 30}, {"gpt-3.5*", 0.5},
	{"gemini-2.5-pro*", 1.25}, {"gemini-2.5-flash-lite*", 0.1}, {"gemini-2.5-flash*", 0.3},
	{"deepseek-chat*", 0.28}, {"deepseek-reasoner*", 0.28},
}

// inputPrice is the published input price of the model (USD per million
// tokens); 0: unknown.
func inputPrice(full, bare string) float64 {
	for _, p := range inputPrices {
		if matches(p.match, full, bare) {
			return p.usd
		}
	}
	return 0
}

// withCache fills mi's prompt-cache prices, minimum cached prompt, input
// price and output price from e where set, else from the family's
// defaults.
func withCache(mi ModelInfo, full, bare string, e ModelConfig) ModelInfo {
	fam := familyOf(bare)
	t := fam.tier(e.CacheTTL)
	mi.CacheRead, mi.CacheWrite, mi.CacheTTL = fam.read, t.write, t.ttl
	mi.MinCachedPrefix = fam.minPrefix
	mi.InputPricePerMTok = inputPrice(full, bare)
	mi.OutputPrice = fam.output
	if e.CacheRead > 0 {
		mi.CacheRead = e.CacheRead
	}
	if e.CacheWrite > 0 {
		mi.CacheWrite = e.CacheWrite
	}
	if e.CacheTTL > 0 {
		mi.CacheTTL = e.CacheTTL
	}
	if e.MinCachedPrefix > 0 {
		mi.MinCachedPrefix = e.MinCachedPrefix
	}
	if e.InputPricePerMTok > 0 {
		mi.InputPricePerMTok = e.InputPricePerMTok
	}
	if e.OutputPrice > 0 {
		mi.OutputPrice = e.OutputPrice
	}
	mi.CacheWrite1h = max(fam.tier(time.Hour).write, mi.CacheWrite)
	return mi
}

// Registry resolves model names. Safe for concurrent use.
//
// A name is looked up, in order, in the config's models: entries, in
// the gateway's table (SetGateway: what LiteLLM's /model/info says of
// its aliases), in the built-in registry; else it gets the defaults.
type Registry struct {
	entries          []ModelConfig // config entries first, then built-ins
	configEntries    int           // how many of entries are the config's
	defaultWindow    int
	defaultThreshold float64
	onUnknown        func(model string)

	// gateway is the gateway's table by lower-case alias; nil: none.
	gateway atomic.Pointer[map[string]GatewayModel]

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
		configEntries:    len(c.Models),
		defaultWindow:    c.DefaultContextWindow,
		defaultThreshold: c.Condense.Threshold,
		onUnknown:        onUnknown,
		unknown:          make(map[string]bool),
	}
}

// CoversEverything reports whether a config entry matches every model
// name ("*"): the gateway's table would then never be consulted.
func (r *Registry) CoversEverything() bool {
	for _, e := range r.entries[:r.configEntries] {
		if strings.TrimSpace(e.Match) == "*" {
			return true
		}
	}
	return false
}

// GatewayModel is what a gateway (LiteLLM's /model/info) says of one of
// its model aliases. Zero numbers are unknown: the family's are used.
type GatewayModel struct {
	// Alias is the name agents send ("gpt-4").
	Alias string
	// Model is the model the alias routes to ("openai/gpt-4o"); it
	// names the family whose encoding, flags, cache lifetime and
	// defaults the alias takes. "": the alias's own name.
	Model string
	// ContextWindow and MaxOutputTokens are the model's limits, tokens.
	ContextWindow, MaxOutputTokens int
	// InputPricePerMTok is the input price, USD per million tokens.
	InputPricePerMTok float64
	// CacheRead and CacheWrite are the prompt cache's read and write
	// prices as multiples of the input price.
	CacheRead, CacheWrite float64
	// OutputPrice is the output price as a multiple of the input price.
	OutputPrice float64
}

// MaxGatewayModels bounds the gateway's table: aliases past it are
// dropped.
const MaxGatewayModels = 10_000

// SetGateway replaces the gateway's table with models (nil or empty: no
// table) and returns how many aliases it holds. Numbers out of range
// (a window above 10M tokens, a read price above the input price, a
// write price below it or above 4 times it, an output price above 100
// times it) are taken as unknown; an
// alias listed more than once (a load-balanced alias's deployments)
// keeps the smallest window and output limit, and the first prices.
// Safe to call while lookups run.
func (r *Registry) SetGateway(models []GatewayModel) int {
	if len(models) == 0 {
		r.gateway.Store(nil)
		return 0
	}
	t := make(map[string]GatewayModel, min(len(models), MaxGatewayModels))
	for _, m := range models {
		alias := strings.ToLower(strings.TrimSpace(m.Alias))
		if alias == "" || len(alias) > MaxModelName || len(m.Model) > MaxModelName {
			continue
		}
		m = m.sane()
		prev, ok := t[alias]
		if !ok {
			if len(t) >= MaxGatewayModels {
				continue
			}
			t[alias] = m
			continue
		}
		prev.ContextWindow = minKnown(prev.ContextWindow, m.ContextWindow)
		prev.MaxOutputTokens = minKnown(prev.MaxOutputTokens, m.MaxOutputTokens)
		if prev.InputPricePerMTok == 0 {
			prev.InputPricePerMTok = m.InputPricePerMTok
		}
		if prev.CacheRead == 0 {
			prev.CacheRead = m.CacheRead
		}
		if prev.CacheWrite == 0 {
			prev.CacheWrite = m.CacheWrite
		}
		if prev.OutputPrice == 0 {
			prev.OutputPrice = m.OutputPrice
		}
		t[alias] = prev
	}
	r.gateway.Store(&t)
	return len(t)
}

// sane zeroes m's numbers that are out of range (NaN included).
func (m GatewayModel) sane() GatewayModel {
	if !(m.ContextWindow > 0 && m.ContextWindow <= maxTokens) {
		m.ContextWindow = 0
	}
	if !(m.MaxOutputTokens > 0 && m.MaxOutputTokens <= maxTokens) {
		m.MaxOutputTokens = 0
	}
	if !(m.InputPricePerMTok > 0 && m.InputPricePerMTok <= maxInputPrice) {
		m.InputPricePerMTok = 0
	}
	if !(m.CacheRead > 0 && m.CacheRead <= 1) {
		m.CacheRead = 0
	}
	if !(m.CacheWrite >= 1 && m.CacheWrite <= maxCacheWrite) {
		m.CacheWrite = 0
	}
	if !(m.OutputPrice > 0 && m.OutputPrice <= maxOutputPrice) {
		m.OutputPrice = 0
	}
	return m
}

// minKnown is the smaller of a and b, 0 being unknown.
func minKnown(a, b int) int {
	switch {
	case a == 0:
		return b
	case b == 0:
		return a
	}
	return min(a, b)
}

// fromGateway returns the gateway's entry for the name, if any.
func (r *Registry) fromGateway(full, bare string) (GatewayModel, bool) {
	t := r.gateway.Load()
	if t == nil {
		return GatewayModel{}, false
	}
	if g, ok := (*t)[full]; ok {
		return g, true
	}
	g, ok := (*t)[bare]
	return g, ok
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
// first maxWarned of them, then TooManyUnknown once). A model whose
// threshold neither its entry nor condense.threshold sets gets its
// window's (DefaultThreshold).
func (r *Registry) Lookup(model string) ModelInfo {
	mi := r.lookup(model)
	mi.Threshold = ThresholdFor(mi.Threshold, mi.ContextWindow)
	return mi
}

func (r *Registry) lookup(model string) ModelInfo {
	full := strings.ToLower(strings.TrimSpace(model))
	bare := StripProvider(full)
	if len(full) <= MaxModelName {
		for i, e := range r.entries {
			if i == r.configEntries {
				if g, ok := r.fromGateway(full, bare); ok {
					return r.gatewayInfo(model, g)
				}
			}
			if matches(e.Match, full, bare) {
				mi := r.info(model, full, bare, e)
				if i < r.configEntries {
					mi.Source = SourceConfig
				}
				return mi
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
	return r.defaults(model, full, bare)
}

// defaults is what the registry says of a name no entry matches.
func (r *Registry) defaults(model, full, bare string) ModelInfo {
	return withCache(ModelInfo{
		Name:            model,
		ContextWindow:   r.defaultWindow,
		Threshold:       r.defaultThreshold,
		Encoding:        EncodingO200k,
		SafetyFactor:    1.1,
		Reasoning:       builtinFlag(full, bare, reasoningOf),
		ThinkingBinding: builtinFlag(full, bare, thinkingBindingOf),
		Source:          SourceDefault,
	}, full, bare, ModelConfig{})
}

// gatewayInfo is what the registry says of an alias the gateway knows:
// the gateway's numbers over those of the built-in family of the model
// it routes to.
func (r *Registry) gatewayInfo(model string, g GatewayModel) ModelInfo {
	full := strings.ToLower(strings.TrimSpace(g.Model))
	if full == "" {
		full = strings.ToLower(strings.TrimSpace(model))
	}
	bare := StripProvider(full)
	mi := r.defaults(model, full, bare)
	for _, e := range builtinModels {
		if matches(e.Match, full, bare) {
			mi = r.info(model, full, bare, e)
			break
		}
	}
	mi.Known, mi.Source = true, SourceGateway
	if g.ContextWindow > 0 {
		mi.ContextWindow = g.ContextWindow
	}
	if g.MaxOutputTokens > 0 {
		mi.MaxOutputTokens = g.MaxOutputTokens
	}
	if g.InputPricePerMTok > 0 {
		mi.InputPricePerMTok = g.InputPricePerMTok
	}
	if g.CacheRead > 0 {
		mi.CacheRead = g.CacheRead
	}
	if g.CacheWrite > 0 {
		mi.CacheWrite = g.CacheWrite
		mi.CacheWrite1h = max(mi.CacheWrite1h, mi.CacheWrite)
	}
	if g.OutputPrice > 0 {
		mi.OutputPrice = g.OutputPrice
	}
	return mi
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
	mi.Source = SourceBuiltin
	return withCache(mi, full, bare, e)
}
