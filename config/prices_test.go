package config

import (
	"math"
	"strings"
	"testing"
	"time"
)

// The 2026 families: cache prices per TTL tier, the minimum cached
// prompt and the input price, by name.
func TestRegistryFamilies2026(t *testing.T) {
	c := Defaults()
	c.Models = []ModelConfig{
		{Match: "claude-1h*", CacheTTL: time.Hour},
		{Match: "claude-10m*", CacheTTL: 10 * time.Minute},
		{Match: "claude-long*", CacheTTL: 3 * time.Hour},
		{Match: "priced*", InputPricePerMTok: 0.42, MinCachedPrefix: 4096, CacheWrite: 1.5},
	}
	r := NewRegistry(&c, nil)
	cases := []struct {
		model       string
		read, write float64
		ttl         time.Duration
		minPrefix   int
		usd         float64
	}{
		{"claude-sonnet-4-5", 0.1, 1.25, 5 * time.Minute, 1024, 3},
		{"anthropic/claude-opus-4-1-20250805", 0.1, 1.25, 5 * time.Minute, 1024, 15},
		{"claude-opus-4-5", 0.1, 1.25, 5 * time.Minute, 1024, 5},
		{"claude-haiku-4-5", 0.1, 1.25, 5 * time.Minute, 2048, 1},
		{"claude-3-5-haiku-20241022", 0.1, 1.25, 5 * time.Minute, 2048, 0.8},
		{"claude-1h-model", 0.1, 2, time.Hour, 1024, 0},         // the 1-hour tier
		{"claude-10m-model", 0.1, 2, 10 * time.Minute, 1024, 0}, // past 5m: the 1-hour tier's price
		{"claude-long-model", 0.1, 2, 3 * time.Hour, 1024, 0},   // past every tier: the longest's
		{"gpt-5.6", 0.1, 1.25, 30 * time.Minute, 1024, 0},       // GPT-5.6 on: writes paid, fixed 30m
		{"openai/gpt-5.6-mini", 0.1, 1.25, 30 * time.Minute, 1024, 0},
		{"gpt-5.10", 0.1, 1.25, 30 * time.Minute, 1024, 0},
		{"gpt-6", 0.1, 1.25, 30 * time.Minute, 1024, 0},
		{"gpt-5.5", 0.1, 1, 5 * time.Minute, 1024, 0}, // before 5.6: free writes
		{"gpt-5.2", 0.1, 1, 5 * time.Minute, 1024, 1.75},
		{"gpt-5", 0.1, 1, 5 * time.Minute, 1024, 1.25},
		{"gpt-5-mini", 0.1, 1, 5 * time.Minute, 1024, 0.25},
		{"gpt-4o", 0.5, 1, 5 * time.Minute, 1024, 2.5},
		{"gpt-4o-mini", 0.5, 1, 5 * time.Minute, 1024, 0.15},
		{"gpt-4.1", 0.25, 1, 5 * time.Minute, 1024, 2},
		{"o3", 0.25, 1, 5 * time.Minute, 1024, 2},
		{"o4-mini", 0.25, 1, 5 * time.Minute, 1024, 1.1},
		{"o1", 0.5, 1, 5 * time.Minute, 1024, 15},
		{"gemini-2.5-pro", 0.1, 1, 5 * time.Minute, 4096, 1.25},
		{"gemini-3-flash-preview", 0.1, 1, 5 * time.Minute, 1024, 0},
		{"deepseek-chat", 0.1, 1, 5 * time.Minute, 1024, 0.28},
		{"qwen3-coder-480b", 0.1, 1.25, 5 * time.Minute, 1024, 0}, // no price of its own
		{"priced-model", 0.1, 1.5, 5 * time.Minute, 4096, 0.42},   // the entry's
		{"never-heard-of-it", 0.1, 1.25, 5 * time.Minute, 1024, 0},
	}
	for _, tc := range cases {
		mi := r.Lookup(tc.model)
		if mi.CacheRead != tc.read || mi.CacheWrite != tc.write || mi.CacheTTL != tc.ttl || mi.MinCachedPrefix != tc.minPrefix || mi.InputPricePerMTok != tc.usd {
			t.Errorf("%s: cache %g/%g/%s min %d $%g, want %g/%g/%s min %d $%g", tc.model, mi.CacheRead, mi.CacheWrite, mi.CacheTTL,
				mi.MinCachedPrefix, mi.InputPricePerMTok, tc.read, tc.write, tc.ttl, tc.minPrefix, tc.usd)
		}
	}
}

func TestOpenAI56(t *testing.T) {
	for name, want := range map[string]bool{
		"gpt-5.6": true, "gpt-5.6-codex": true, "gpt-5.7": true, "gpt-5.12": true, "gpt-6": true, "gpt-7.1-mini": true,
		"gpt-5": false, "gpt-5.5": false, "gpt-5-mini": false, "gpt-5.1-codex": false, "gpt-4o": false, "gpt-": false,
		"gpt-x": false, "o3": false, "gpt-99999999999999999999": true,
	} {
		if got := openAI56(name); got != want {
			t.Errorf("openAI56(%q) = %v, want %v", name, got, want)
		}
	}
}

func TestModelEntryPriceFieldsValidated(t *testing.T) {
	for _, m := range []ModelConfig{
		{Match: "x", InputPricePerMTok: -1}, {Match: "x", InputPricePerMTok: 1e6}, {Match: "x", InputPricePerMTok: math.NaN()},
		{Match: "x", MinCachedPrefix: -1}, {Match: "x", MinCachedPrefix: maxTokens + 1},
	} {
		err := m.validate()
		if err == nil || !strings.Contains(err.Error(), "input_price_per_mtok") && !strings.Contains(err.Error(), "min_cached_prefix") {
			t.Errorf("%+v: validate = %v, want the field named", m, err)
		}
	}
	c := Defaults()
	c.Upstream = "http://up"
	c.Models = []ModelConfig{{Match: "x", InputPricePerMTok: 2.5, MinCachedPrefix: 2048}}
	if err := c.Validate(); err != nil {
		t.Errorf("valid entry refused: %v", err)
	}
}

// The gateway's table: an alias it lists overrides the built-in family
// guessed from the name, not an entry of the config; the family of the
// model it routes to gives the rest.
func TestRegistryGateway(t *testing.T) {
	c := Defaults()
	c.Models = []ModelConfig{{Match: "mine", ContextWindow: 50000}}
	var unknown []string
	r := NewRegistry(&c, func(m string) { unknown = append(unknown, m) })
	if got := r.Lookup("gpt-4"); got.ContextWindow != 8192 || got.Encoding != EncodingCL100k || got.Source != SourceBuiltin {
		t.Fatalf("gpt-4 before the table: %+v", got)
	}
	n := r.SetGateway([]GatewayModel{
		{Alias: "gpt-4", Model: "openai/gpt-4o", ContextWindow: 128000, MaxOutputTokens: 16384, InputPricePerMTok: 2.5, CacheRead: 0.5},
		{Alias: "mine", Model: "openai/gpt-4o", ContextWindow: 128000},
		{Alias: "team-claude", Model: "anthropic/claude-sonnet-4-5", ContextWindow: 200000, CacheRead: 0.1, CacheWrite: 1.25},
		{Alias: "lb", ContextWindow: 100000, InputPricePerMTok: 1},
		{Alias: "lb", ContextWindow: 60000, InputPricePerMTok: 2},
		{Alias: "weird", ContextWindow: -5, CacheRead: 3, CacheWrite: 0.5, InputPricePerMTok: math.Inf(1)},
		{Alias: ""},
	})
	if n != 5 {
		t.Errorf("SetGateway kept %d aliases, want 5", n)
	}
	g := r.Lookup("GPT-4")
	if g.ContextWindow != 128000 || g.MaxOutputTokens != 16384 || g.InputPricePerMTok != 2.5 || g.CacheRead != 0.5 || g.CacheWrite != 1 ||
		g.Encoding != EncodingO200k || g.Match != "gpt-4o*" || g.Source != SourceGateway || !g.Known {
		t.Errorf("gpt-4 from the gateway: %+v", g)
	}
	if m := r.Lookup("mine"); m.ContextWindow != 50000 || m.Source != SourceConfig {
		t.Errorf("mine: the config's entry must win: %+v", m)
	}
	if tc := r.Lookup("team-claude"); tc.ContextWindow != 200000 || tc.SafetyFactor != 1.2 || tc.CacheTTL != 5*time.Minute || tc.InputPricePerMTok != 3 {
		t.Errorf("team-claude: %+v", tc)
	}
	if lb := r.Lookup("lb"); lb.ContextWindow != 60000 || lb.InputPricePerMTok != 1 {
		t.Errorf("lb: want the smallest window and the first price: %+v", lb)
	}
	if w := r.Lookup("weird"); w.ContextWindow != c.DefaultContextWindow || w.CacheRead != 0.1 || w.CacheWrite != 1.25 || w.InputPricePerMTok != 0 {
		t.Errorf("weird: out-of-range numbers must be unknown: %+v", w)
	}
	if len(unknown) != 0 {
		t.Errorf("aliases the gateway knows reported unknown: %v", unknown)
	}
	r.SetGateway(nil)
	if got := r.Lookup("gpt-4"); got.ContextWindow != 8192 {
		t.Errorf("gpt-4 after the table is dropped: %+v", got)
	}
}

func TestRegistryGatewayBounded(t *testing.T) {
	c := Defaults()
	r := NewRegistry(&c, nil)
	models := make([]GatewayModel, MaxGatewayModels+10)
	for i := range models {
		models[i] = GatewayModel{Alias: "m" + strings.Repeat("x", i%3) + string(rune('a'+i%26)) + itoa(i), ContextWindow: 1000}
	}
	models = append(models, GatewayModel{Alias: strings.Repeat("y", MaxModelName+1), ContextWindow: 1000})
	if n := r.SetGateway(models); n != MaxGatewayModels {
		t.Errorf("kept %d aliases, want %d", n, MaxGatewayModels)
	}
}

func itoa(i int) string {
	var b []byte
	for {
		b = append([]byte{byte('0' + i%10)}, b...)
		if i /= 10; i == 0 {
			return string(b)
		}
	}
}

func TestCoversEverything(t *testing.T) {
	c := Defaults()
	if NewRegistry(&c, nil).CoversEverything() {
		t.Error("no entries: covers everything")
	}
	c.Models = []ModelConfig{{Match: "gpt*"}, {Match: " * "}}
	if !NewRegistry(&c, nil).CoversEverything() {
		t.Error(`"*" entry: does not cover everything`)
	}
}

// The LiteLLM keys: from the environment and from a models: entry's new
// fields in YAML.
func TestLiteLLMKeysAndPriceFieldsLoad(t *testing.T) {
	file := writeFile(t, "upstream: http://gw:4000\nlitellm:\n  refresh: 2m\nmodels:\n  - match: my-alias\n    input_price_per_mtok: 3.5\n    min_cached_prefix: 2048\n")
	c, err := Load(flags(t, "--config", file), []string{"CONDENSE_LITELLM_KEY=sk-master-key"})
	if err != nil {
		t.Fatal(err)
	}
	if !c.LiteLLM.ModelInfo || c.LiteLLM.Key != "sk-master-key" || c.LiteLLM.Refresh != 2*time.Minute {
		t.Errorf("litellm: %+v", c.LiteLLM)
	}
	if mi := NewRegistry(c, nil).Lookup("my-alias"); mi.InputPricePerMTok != 3.5 || mi.MinCachedPrefix != 2048 {
		t.Errorf("my-alias: $%g min %d", mi.InputPricePerMTok, mi.MinCachedPrefix)
	}
	if _, err := Load(flags(t, "--config", file), []string{"CONDENSE_LITELLM_KEY= sk-x "}); err == nil || !strings.Contains(err.Error(), "litellm.key") {
		t.Errorf("a key with spaces: %v", err)
	}
}

// The output price, a multiple of the input price: the family's, a
// models: entry's output_price over it, and the gateway's (LiteLLM's
// output_cost_per_token / input_cost_per_token) over the family of the
// model an alias routes to.
func TestRegistryOutputPrices(t *testing.T) {
	c := Defaults()
	c.Models = []ModelConfig{
		{Match: "cheap-out*", OutputPrice: 2},
		{Match: "gemini-mine*", CacheRead: 0.25}, // an entry without output_price: the family's
	}
	r := NewRegistry(&c, nil)
	r.SetGateway([]GatewayModel{
		{Alias: "team-gemini", Model: "gemini/gemini-3-pro-preview", OutputPrice: 12.0 / 2}, // $2/$12
		{Alias: "team-ds", Model: "deepseek/deepseek-reasoner", OutputPrice: 2.19 / 0.55},   // an older price list's
		{Alias: "routed", Model: "openai/gpt-5"},                                            // no price: the family's
		{Alias: "lb", Model: "openai/gpt-4o"},                                               // the first deployment has none
		{Alias: "lb", Model: "openai/gpt-4o", OutputPrice: 3},                               // the second's
		{Alias: "absurd", Model: "openai/gpt-4o", OutputPrice: 500},                         // out of range: unknown
	})
	for model, want := range map[string]float64{
		"claude-sonnet-4-5":                   5,
		"claude-opus-4-5":                     5,
		"claude-haiku-4-5":                    5,
		"anthropic/claude-3-5-haiku-20241022": 5,
		"gpt-5":                               8,
		"gpt-5-mini":                          8,
		"gpt-5.2":                             8,
		"openai/gpt-5.6":                      8,
		"gpt-6":                               8,
		"gpt-4o":                              4,
		"gpt-4o-mini":                         4,
		"gpt-4.1":                             4,
		"o1":                                  4,
		"o3":                                  4,
		"o4-mini":                             4,
		"gemini-2.5-pro":                      8,
		"gemini/gemini-2.5-flash":             8,
		"gemini-2.5-flash-lite":               4,
		"gemini-2.0-flash":                    4,
		"deepseek-chat":                       1.5,
		"qwen3-coder-480b":                    5, // unknown family: Anthropic's
		"never-heard-of-it":                   5,
		"cheap-out-model":                     2, // the entry's
		"gemini-mine":                         8,
		"team-gemini":                         6,
		"team-ds":                             2.19 / 0.55,
		"routed":                              8,
		"lb":                                  3,
		"absurd":                              4,
	} {
		if got := r.Lookup(model).OutputPrice; math.Abs(got-want) > 1e-9 {
			t.Errorf("%s: output price %g, want %g", model, got, want)
		}
	}
}

func TestOutputPriceValidatedAndLoaded(t *testing.T) {
	for _, m := range []ModelConfig{{Match: "x", OutputPrice: -1}, {Match: "x", OutputPrice: 101}, {Match: "x", OutputPrice: math.NaN()}} {
		if err := m.validate(); err == nil || !strings.Contains(err.Error(), "output_price") {
			t.Errorf("%+v: validate = %v, want output_price named", m, err)
		}
	}
	for _, m := range []ModelConfig{{Match: "x"}, {Match: "x", OutputPrice: 0.5}, {Match: "x", OutputPrice: 100}} {
		if err := m.validate(); err != nil {
			t.Errorf("%+v: valid entry refused: %v", m, err)
		}
	}
	file := writeFile(t, "upstream: http://gw:4000\nmodels:\n  - match: my-model\n    output_price: 3\n")
	c, err := Load(flags(t, "--config", file), nil)
	if err != nil {
		t.Fatal(err)
	}
	if mi := NewRegistry(c, nil).Lookup("my-model"); mi.OutputPrice != 3 {
		t.Errorf("my-model: output price %g, want 3", mi.OutputPrice)
	}
	bad := writeFile(t, "upstream: http://gw:4000\nmodels:\n  - match: my-model\n    output_price: 200\n")
	if _, err := Load(flags(t, "--config", bad), nil); err == nil || !strings.Contains(err.Error(), "output_price") {
		t.Errorf("output_price 200 loaded: %v", err)
	}
}
