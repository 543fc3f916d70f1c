package config

import (
	"errors"
	"fmt"
	"path"
	"strings"
	"sync"
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
}

func (m ModelConfig) validate() error {
	var errs []error
	if m.Match == "" {
		errs = append(errs, errors.New("match: must not be empty"))
	} else if _, err := path.Match(m.Match, ""); err != nil {
		errs = append(errs, fmt.Errorf("match: bad glob %q: %w", m.Match, err))
	}
	if m.ContextWindow < 0 {
		errs = append(errs, fmt.Errorf("context_window: must not be negative, got %d", m.ContextWindow))
	}
	if m.MaxOutputTokens < 0 {
		errs = append(errs, fmt.Errorf("max_output_tokens: must not be negative, got %d", m.MaxOutputTokens))
	}
	if m.Threshold < 0 || m.Threshold > 1 {
		errs = append(errs, fmt.Errorf("threshold: must be in (0,1] (or 0 for the global one), got %g", m.Threshold))
	}
	switch m.Encoding {
	case "", EncodingO200k, EncodingCL100k:
	default:
		errs = append(errs, fmt.Errorf("encoding: %q is not %s or %s", m.Encoding, EncodingO200k, EncodingCL100k))
	}
	if m.SafetyFactor < 0 || (m.SafetyFactor > 0 && m.SafetyFactor < 1) || m.SafetyFactor > 3 {
		errs = append(errs, fmt.Errorf("safety_factor: must be in [1,3] (or 0 for 1.0), got %g", m.SafetyFactor))
	}
	return errors.Join(errs...)
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
}

// Registry resolves model names. Safe for concurrent use.
type Registry struct {
	entries          []ModelConfig // config entries first, then built-ins
	defaultWindow    int
	defaultThreshold float64
	onUnknown        func(model string)

	mu      sync.Mutex
	unknown map[string]bool // models already reported unknown
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

// Lookup returns what the registry knows of model. Unknown models get the
// default window; the first lookup of each is reported to onUnknown.
func (r *Registry) Lookup(model string) ModelInfo {
	full := strings.ToLower(strings.TrimSpace(model))
	bare := StripProvider(full)
	for _, e := range r.entries {
		if matches(e.Match, full, bare) {
			return r.info(model, full, bare, e)
		}
	}
	r.mu.Lock()
	first := !r.unknown[full]
	if first && len(r.unknown) < 10000 {
		r.unknown[full] = true
	}
	r.mu.Unlock()
	if first && r.onUnknown != nil {
		r.onUnknown(model)
	}
	return ModelInfo{
		Name:          model,
		ContextWindow: r.defaultWindow,
		Threshold:     r.defaultThreshold,
		Encoding:      EncodingO200k,
		SafetyFactor:  1.1,
		Reasoning:     builtinReasoning(full, bare),
	}
}

// builtinReasoning is what the first built-in entry matching the name
// says of reasoning.
func builtinReasoning(full, bare string) bool {
	for _, e := range builtinModels {
		if matches(e.Match, full, bare) {
			return e.Reasoning != nil && *e.Reasoning
		}
	}
	return false
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
	if e.Reasoning != nil {
		mi.Reasoning = *e.Reasoning
	} else {
		mi.Reasoning = builtinReasoning(full, bare)
	}
	return mi
}
