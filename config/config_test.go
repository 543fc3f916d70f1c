package config

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
)

func writeFile(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "c.yaml")
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func flags(t *testing.T, args ...string) *pflag.FlagSet {
	t.Helper()
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	RegisterFlags(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	return fs
}

func TestPrecedence(t *testing.T) {
	file := writeFile(t, "upstream: http://file:1\ncondense:\n  threshold: 0.9\n  keep_recent_turns: 7\nselective:\n  exclude_tools: [Read, Grep]\n")
	tests := []struct {
		name      string
		args      []string
		env       []string
		upstream  string
		threshold float64
		keep      int
		exclude   []string
	}{
		{"defaults", nil, withUpstream(), testUpstream, 0, 3, []string{}},
		{"file over default", []string{"--config", file}, nil, "http://file:1", 0.9, 7, []string{"Read", "Grep"}},
		{"config file from env", nil, []string{"CONDENSE_CONFIG=" + file}, "http://file:1", 0.9, 7, []string{"Read", "Grep"}},
		{"env over file", []string{"--config", file}, []string{"CONDENSE_UPSTREAM=http://env:2", "CONDENSE_CONDENSE_THRESHOLD=0.85", "CONDENSE_SELECTIVE_EXCLUDE_TOOLS=Bash, Write"}, "http://env:2", 0.85, 7, []string{"Bash", "Write"}},
		{"flag over env", []string{"--config", file, "--upstream", "http://flag:3", "--threshold", "0.95", "--exclude-tools", "Edit"}, []string{"CONDENSE_UPSTREAM=http://env:2", "CONDENSE_CONDENSE_THRESHOLD=0.85"}, "http://flag:3", 0.95, 7, []string{"Edit"}},
		{"unset flag does not override", []string{"--config", file}, []string{"CONDENSE_CONDENSE_KEEP_RECENT_TURNS=4"}, "http://file:1", 0.9, 4, []string{"Read", "Grep"}},
		{"other env ignored", nil, withUpstream("UPSTREAM=http://nope:1", "HOME=/x"), testUpstream, 0, 3, []string{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Load(flags(t, tc.args...), tc.env)
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			if c.Upstream != tc.upstream {
				t.Errorf("upstream = %q, want %q", c.Upstream, tc.upstream)
			}
			if c.Condense.Threshold != tc.threshold {
				t.Errorf("threshold = %g, want %g", c.Condense.Threshold, tc.threshold)
			}
			if c.Condense.KeepRecentTurns != tc.keep {
				t.Errorf("keep_recent_turns = %d, want %d", c.Condense.KeepRecentTurns, tc.keep)
			}
			if strings.Join(c.Selective.ExcludeTools, ",") != strings.Join(tc.exclude, ",") {
				t.Errorf("exclude_tools = %q, want %q", c.Selective.ExcludeTools, tc.exclude)
			}
		})
	}
}

func TestEveryDesignKeyLoadsFromFile(t *testing.T) {
	file := writeFile(t, `listen: ":9090"
upstream: "http://litellm:4000"
redis_url: "redis://redis:6379/0"
condense:
  mode: full
  threshold: 0.7
  target: 0.4
  prepare_threshold: 0.6
  keep_recent_turns: 5
  chunk_tokens: 6000
  summary_budget_tokens: 4000
  summarizer: extractive
  summary_model: "gpt-4o-mini"
  summary_timeout: 30s
  max_wait: 12s
  max_messages: 400
  originals_ttl: 2h
selective:
  enabled: false
  keep_recent_tool_outputs: 2
  min_tool_output_tokens: 300
  exclude_tools: [Read]
  clear_tool_inputs: true
auth:
  keys: [k1, k2]
models:
  - match: "my-model*"
    context_window: 32000
    threshold: 0.75
    encoding: cl100k_base
`)
	c, err := Load(flags(t, "--config", file), nil)
	if err != nil {
		t.Fatal(err)
	}
	cd := c.Condense
	if c.Listen != ":9090" || c.Upstream != "http://litellm:4000" || c.RedisURL != "redis://redis:6379/0" {
		t.Errorf("top-level keys: %+v", c)
	}
	if cd.Mode != "full" || cd.Threshold != 0.7 || cd.Target != 0.4 || cd.PrepareThreshold != 0.6 ||
		cd.KeepRecentTurns != 5 || cd.ChunkTokens != 6000 || cd.SummaryBudgetTokens != 4000 ||
		cd.Summarizer != "extractive" || cd.SummaryModel != "gpt-4o-mini" || cd.SummaryTimeout != 30*time.Second ||
		cd.MaxMessages != 400 || cd.OriginalsTTL != 2*time.Hour || cd.MaxWait != 12*time.Second {
		t.Errorf("condense keys: %+v", cd)
	}
	s := c.Selective
	if s.Enabled || s.KeepRecentToolOutputs != 2 || s.MinToolOutputTokens != 300 || len(s.ExcludeTools) != 1 || !s.ClearToolInputs {
		t.Errorf("selective keys: %+v", s)
	}
	if len(c.Auth.Keys) != 2 {
		t.Errorf("auth.keys: %v", c.Auth.Keys)
	}
	if len(c.Models) != 1 || c.Models[0].ContextWindow != 32000 || c.Models[0].Encoding != EncodingCL100k {
		t.Errorf("models: %+v", c.Models)
	}
}

func TestValidationListsEveryProblem(t *testing.T) {
	tests := []struct {
		name string
		yaml string
		want []string
	}{
		{"threshold under the least", "condense:\n  threshold: 0.005\n", []string{"condense.threshold"}},
		{"threshold above one", "condense:\n  threshold: 1.5\n", []string{"condense.threshold"}},
		{"target at threshold", "condense:\n  threshold: 0.6\n  target: 0.6\n  prepare_threshold: 0.5\n", []string{"condense.target"}},
		{"bad upstream", "upstream: \"::nope\"\n", []string{"upstream"}},
		{"upstream without scheme", "upstream: \"litellm:4000\"\n", []string{"upstream"}},
		{"bad redis", "redis_url: \"http://x\"\n", []string{"redis_url"}},
		{"negative sizes", "max_body_bytes: -1\ncache_max_bytes: 0\ncondense:\n  max_messages: -3\n", []string{"max_body_bytes", "cache_max_bytes", "condense.max_messages"}},
		{"bad mode and summarizer", "condense:\n  mode: fast\n  summarizer: gpt\n", []string{"condense.mode", "condense.summarizer"}},
		{"bad log", "log_level: loud\nlog_format: xml\n", []string{"log_level", "log_format"}},
		{"small chunk", "condense:\n  chunk_tokens: 10\n", []string{"condense.chunk_tokens"}},
		{"missing prompt file", "condense:\n  prompt_file: /nonexistent/prompt.txt\n", []string{"condense.prompt_file"}},
		{"bad model entry", "models:\n  - match: \"[\"\n    threshold: 2\n    encoding: p50k\n", []string{"models[0]", "match", "threshold", "encoding"}},
		{"model threshold below target", "condense:\n  target: 0.4\nmodels:\n  - match: \"x*\"\n    threshold: 0.3\n", []string{"above condense.target"}},
		{"negative durations", "shutdown_grace: -1s\ncondense:\n  summary_timeout: 0s\n", []string{"shutdown_grace", "condense.summary_timeout"}},
		{"hardening keys", "originals_max_bytes: 0\nmax_inflight_condense: -1\nscope_secret: short\nscope_headers: [\"Authorization\", \"bad header\"]\n",
			[]string{"originals_max_bytes", "max_inflight_condense", "scope_secret", "scope_headers[1]"}},
		{"no scope header", "scope_headers: []\n", []string{"scope_headers"}},
		{"many at once", "upstream: \"\"\ncondense:\n  threshold: 2\n  keep_recent_turns: 0\nselective:\n  min_tool_output_tokens: -1\n", []string{"upstream", "condense.threshold", "condense.keep_recent_turns", "selective.min_tool_output_tokens"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Load(flags(t, "--config", writeFile(t, tc.yaml)), nil)
			if err == nil {
				t.Fatal("Load succeeded, want a validation error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error does not mention %q:\n%v", w, err)
				}
			}
		})
	}
}

func TestBadEnvValueIsAnError(t *testing.T) {
	if _, err := Load(nil, withUpstream("CONDENSE_CONDENSE_THRESHOLD=abc")); err == nil {
		t.Fatal("want error for unparsable threshold")
	}
	if _, err := Load(nil, withUpstream("CONDENSE_SHUTDOWN_GRACE=soon")); err == nil {
		t.Fatal("want error for unparsable duration")
	}
}

func TestMissingConfigFile(t *testing.T) {
	_, err := Load(flags(t, "--config", "/nonexistent/x.yaml"), withUpstream())
	if err == nil || !strings.Contains(err.Error(), "/nonexistent/x.yaml") {
		t.Fatalf("err = %v", err)
	}
}

func TestRegistryLookup(t *testing.T) {
	c := Defaults()
	c.Models = []ModelConfig{{Match: "gpt-4o-custom", ContextWindow: 50000, Threshold: 0.6}}
	var unknown []string
	r := NewRegistry(&c, func(m string) { unknown = append(unknown, m) })
	tests := []struct {
		model    string
		window   int
		encoding string
		known    bool
		thr      float64
	}{
		{"gpt-4o", 128000, EncodingO200k, true, 0.6},
		{"openai/gpt-4o-mini-2024-07-18", 128000, EncodingO200k, true, 0.6},
		{"gpt-4o-custom", 50000, EncodingO200k, true, 0.6},
		{"gpt-4.1-mini", 1047576, EncodingO200k, true, 0.6},
		{"gpt-5", 272000, EncodingO200k, true, 0.6},
		{"o3-mini", 200000, EncodingO200k, true, 0.6},
		{"o4-mini", 200000, EncodingO200k, true, 0.6},
		{"gpt-4", 8192, EncodingCL100k, true, 0.8},
		{"gpt-3.5-turbo", 16385, EncodingCL100k, true, 0.8},
		{"anthropic/claude-sonnet-4-20250514", 200000, EncodingO200k, true, 0.6},
		{"openrouter/anthropic/claude-opus-4.1", 200000, EncodingO200k, true, 0.6},
		{"gemini/gemini-2.5-pro", 1048576, EncodingO200k, true, 0.6},
		{"deepseek-chat", 128000, EncodingO200k, true, 0.6},
		{"openrouter/qwen/qwen3-coder", 262144, EncodingO200k, true, 0.6},
		{"groq/llama-3.3-70b-versatile", 128000, EncodingO200k, true, 0.6},
		{"GPT-4O", 128000, EncodingO200k, true, 0.6},
		{"mystery-model", 128000, EncodingO200k, false, 0.6},
		{"mystery-model", 128000, EncodingO200k, false, 0.6},
	}
	for _, tc := range tests {
		mi := r.Lookup(tc.model)
		if mi.ContextWindow != tc.window || mi.Encoding != tc.encoding || mi.Known != tc.known || mi.Threshold != tc.thr {
			t.Errorf("Lookup(%q) = %+v, want window %d encoding %s known %v threshold %g", tc.model, mi, tc.window, tc.encoding, tc.known, tc.thr)
		}
		if mi.SafetyFactor < 1 {
			t.Errorf("Lookup(%q) safety factor %g < 1", tc.model, mi.SafetyFactor)
		}
	}
	if len(unknown) != 1 || unknown[0] != "mystery-model" {
		t.Errorf("unknown reported %v, want exactly once", unknown)
	}
	if claude := r.Lookup("claude-sonnet-4-5"); claude.SafetyFactor <= 1 {
		t.Errorf("claude safety factor %g, want > 1", claude.SafetyFactor)
	}
}

// TestModes: the config accepts exactly Modes, and its error and the
// flag's help name every one of them (internal/app checks Modes are the
// engine's).
func TestModes(t *testing.T) {
	for _, m := range Modes {
		if _, err := Load(flags(t, "--mode", m), withUpstream()); err != nil {
			t.Errorf("mode %q refused: %v", m, err)
		}
	}
	_, err := Load(flags(t, "--mode", "fast"), withUpstream())
	if err == nil {
		t.Fatal("mode fast accepted")
	}
	usage := flags(t).Lookup("mode").Usage
	for _, m := range Modes {
		if !strings.Contains(err.Error(), m) {
			t.Errorf("error %q does not name %q", err, m)
		}
		if !strings.Contains(usage, m) {
			t.Errorf("--mode help %q does not name %q", usage, m)
		}
	}
}

// TestRegistryReasoning: the o-series and gpt-5 families are reasoning
// models (max_completion_tokens, default temperature only); an entry of
// the config decides for the names it matches, and one that does not say
// keeps the built-in answer.
func TestRegistryReasoning(t *testing.T) {
	file := writeFile(t, `models:
  - match: "gpt-5-chat*"
    reasoning: false
  - match: "my-thinker"
    context_window: 64000
    reasoning: true
  - match: "o3*"
    context_window: 100000
`)
	c, err := Load(flags(t, "--config", file), withUpstream())
	if err != nil {
		t.Fatal(err)
	}
	r := NewRegistry(c, nil)
	for model, want := range map[string]bool{
		"gpt-5": true, "gpt-5-mini": true, "openai/gpt-5-nano": true, "o1": true, "o3-mini": true, "o4-mini": true,
		"o3-pro":            true, // the config's entry leaves it to the built-in one
		"gpt-5-chat-latest": false, "my-thinker": true,
		"gpt-4o": false, "gpt-4.1": false, "claude-sonnet-4": false, "mystery": false,
	} {
		if got := r.Lookup(model).Reasoning; got != want {
			t.Errorf("%s: reasoning %v, want %v", model, got, want)
		}
	}
	if w := r.Lookup("o3-pro").ContextWindow; w != 100000 {
		t.Errorf("o3-pro window %d: the config's entry did not apply", w)
	}
}

// TestHardeningKeysFromEverySource: the keys of the hardening work come
// from the flag, the environment and the YAML file, lists split in the
// environment.
func TestHardeningKeysFromEverySource(t *testing.T) {
	file := writeFile(t, "scope_secret: from-the-file-0123456789\nscope_headers: [Authorization, X-User]\noriginals_max_bytes: 1000\nmax_inflight_condense: 3\n")
	c, err := Load(flags(t, "--config", file), withUpstream())
	if err != nil {
		t.Fatal(err)
	}
	if c.ScopeSecret != "from-the-file-0123456789" || strings.Join(c.ScopeHeaders, ",") != "Authorization,X-User" || c.OriginalsMaxBytes != 1000 || c.MaxInflightCondense != 3 {
		t.Errorf("YAML: %q %v %d %d", c.ScopeSecret, c.ScopeHeaders, c.OriginalsMaxBytes, c.MaxInflightCondense)
	}
	c, err = Load(flags(t), withUpstream("CONDENSE_SCOPE_SECRET=from-the-environment-0123", "CONDENSE_SCOPE_HEADERS=x-api-key, X-Team",
		"CONDENSE_ORIGINALS_MAX_BYTES=2000", "CONDENSE_MAX_INFLIGHT_CONDENSE=4"))
	if err != nil {
		t.Fatal(err)
	}
	if c.ScopeSecret != "from-the-environment-0123" || strings.Join(c.ScopeHeaders, ",") != "x-api-key,X-Team" || c.OriginalsMaxBytes != 2000 || c.MaxInflightCondense != 4 {
		t.Errorf("env: %q %v %d %d", c.ScopeSecret, c.ScopeHeaders, c.OriginalsMaxBytes, c.MaxInflightCondense)
	}
	c, err = Load(flags(t, "--scope-secret", "from-the-flag-0123456789", "--scope-headers", "X-User", "--originals-max-bytes", "3000", "--max-inflight-condense", "5"), withUpstream())
	if err != nil {
		t.Fatal(err)
	}
	if c.ScopeSecret != "from-the-flag-0123456789" || strings.Join(c.ScopeHeaders, ",") != "X-User" || c.OriginalsMaxBytes != 3000 || c.MaxInflightCondense != 5 {
		t.Errorf("flags: %q %v %d %d", c.ScopeSecret, c.ScopeHeaders, c.OriginalsMaxBytes, c.MaxInflightCondense)
	}
	d := Defaults()
	if d.ScopeSecret != "" || strings.Join(d.ScopeHeaders, ",") != "Authorization,X-Api-Key,Api-Key,X-Litellm-Api-Key,X-Goog-Api-Key" {
		t.Errorf("defaults: %q %v", d.ScopeSecret, d.ScopeHeaders)
	}
}

func TestRegistryCachePrices(t *testing.T) {
	c := Defaults()
	c.Models = []ModelConfig{{Match: "my-claude*", ContextWindow: 100000, CacheTTL: time.Hour}, {Match: "cheap*", CacheRead: 0.3, CacheWrite: 1}}
	r := NewRegistry(&c, nil)
	cases := []struct {
		model       string
		read, write float64
		ttl         time.Duration
	}{
		{"claude-sonnet-4-5", 0.1, 1.25, 5 * time.Minute},
		{"anthropic/claude-opus-4-1", 0.1, 1.25, 5 * time.Minute},
		{"gpt-4o", 0.5, 1, 5 * time.Minute},
		{"gpt-5.5", 0.1, 1, 5 * time.Minute},
		{"o3-mini", 0.25, 1, 5 * time.Minute},
		{"deepseek-chat", 0.1, 1, 5 * time.Minute},
		{"my-claude-fork", 0.1, 2, time.Hour},             // the entry's TTL, the family's prices for it (1h writes at 2)
		{"cheap-model", 0.3, 1, 5 * time.Minute},          // the entry's prices
		{"never-heard-of-it", 0.1, 1.25, 5 * time.Minute}, // unknown: the dearest to bust
	}
	for _, tc := range cases {
		mi := r.Lookup(tc.model)
		if mi.CacheRead != tc.read || mi.CacheWrite != tc.write || mi.CacheTTL != tc.ttl {
			t.Errorf("%s: cache %g/%g/%s, want %g/%g/%s", tc.model, mi.CacheRead, mi.CacheWrite, mi.CacheTTL, tc.read, tc.write, tc.ttl)
		}
	}
	bad := ModelConfig{Match: "x", CacheRead: 1.5, CacheWrite: 0.5, CacheTTL: -time.Second}
	if err := bad.validate(); err == nil || !strings.Contains(err.Error(), "cache_read") || !strings.Contains(err.Error(), "cache_write") || !strings.Contains(err.Error(), "cache_ttl") {
		t.Errorf("validate = %v, want cache_read, cache_write and cache_ttl named", err)
	}
}

// TestRegistryThinkingBinding: Claude Fable binds thinking to its prefix
// (built in, under any provider prefix); an entry decides for the names
// it matches, and one that does not say keeps the built-in answer.
func TestRegistryThinkingBinding(t *testing.T) {
	file := writeFile(t, `models:
  - match: "claude-fable-5-9*"
    thinking_binding: false
  - match: "my-binder"
    thinking_binding: true
  - match: "claude-fable-6*"
    context_window: 500000
`)
	c, err := Load(flags(t, "--config", file), withUpstream())
	if err != nil {
		t.Fatal(err)
	}
	r := NewRegistry(c, nil)
	for model, want := range map[string]bool{
		"claude-fable-5-1": true, "anthropic/claude-fable-5-1": true, "us.anthropic.claude-fable-5-1-v1:0": true,
		"claude-fable-6-0": true, // the entry leaves it to the built-in one
		"claude-fable-5-9": false, "my-binder": true,
		"claude-opus-4-7": false, "claude-sonnet-4-5": false, "gpt-5": false, "mystery": false,
	} {
		if got := r.Lookup(model).ThinkingBinding; got != want {
			t.Errorf("%s: thinking binding %v, want %v", model, got, want)
		}
	}
	if w := r.Lookup("claude-fable-6-0").ContextWindow; w != 500000 {
		t.Errorf("claude-fable-6-0 window %d: the entry did not apply", w)
	}
}

// TestUnknownModelsBounded: the first 1,000 unknown names are reported
// once each, then one line says no more will be; a name longer than
// MaxModelName is nobody's (not even a "*" glob's) and costs no glob match.
func TestUnknownModelsBounded(t *testing.T) {
	c := Defaults()
	var reported []string
	r := NewRegistry(&c, func(m string) { reported = append(reported, m) })
	for i := 0; i < 1500; i++ {
		r.Lookup(fmt.Sprintf("mystery-model-%d", i))
		r.Lookup(fmt.Sprintf("mystery-model-%d", i))
	}
	if len(reported) != 1001 || reported[1000] != TooManyUnknown {
		t.Fatalf("%d reports, the last %q", len(reported), reported[len(reported)-1])
	}
	c.Models = []ModelConfig{{Match: "*", ContextWindow: 50000}}
	r = NewRegistry(&c, nil)
	if mi := r.Lookup(strings.Repeat("a", MaxModelName+1)); mi.Known || mi.ContextWindow != c.DefaultContextWindow {
		t.Errorf("an over-long name matched an entry: %+v", mi)
	}
	if mi := r.Lookup("a"); !mi.Known || mi.ContextWindow != 50000 {
		t.Errorf("a short name missed the * entry: %+v", mi)
	}
}

// testUpstream is the upstream the tests' configurations name: the key
// is required.
const testUpstream = "http://upstream.test"

// withUpstream is env with CONDENSE_UPSTREAM set first.
func withUpstream(env ...string) []string {
	return append([]string{EnvName("upstream") + "=" + testUpstream}, env...)
}

// TestHoldoutShare: condense.holdout_share is read from the file, the
// environment and its flag, defaults to 0 (no holdout arm), and a share
// outside [0, 1] is refused by name.
func TestHoldoutShare(t *testing.T) {
	if d := Defaults(); d.Condense.HoldoutShare != 0 {
		t.Errorf("default %v, want 0", d.Condense.HoldoutShare)
	}
	for name, load := range map[string]func() (*Config, error){
		"yaml": func() (*Config, error) {
			return Load(flags(t, "--config", writeFile(t, "condense:\n  holdout_share: 0.5\n")), withUpstream())
		},
		"env":  func() (*Config, error) { return Load(nil, withUpstream("CONDENSE_CONDENSE_HOLDOUT_SHARE=0.5")) },
		"flag": func() (*Config, error) { return Load(flags(t, "--holdout-share=0.5"), withUpstream()) },
	} {
		c, err := load()
		if err != nil || c.Condense.HoldoutShare != 0.5 {
			t.Errorf("%s: %v, %v", name, c, err)
		}
	}
	for _, bad := range []string{"1.5", "-0.1"} {
		_, err := Load(nil, withUpstream("CONDENSE_CONDENSE_HOLDOUT_SHARE="+bad))
		if err == nil || !strings.Contains(err.Error(), "condense.holdout_share:") {
			t.Errorf("holdout_share %s: %v, want it refused by name", bad, err)
		}
	}
}
