package config

import (
	"strings"
	"testing"
)

// TestKeepAliveKeys: the keep-alive keys come from the file, the
// environment and the flags, off by default, and bad values are refused.
func TestKeepAliveKeys(t *testing.T) {
	d := Defaults()
	if d.KeepAlive.Enabled || d.KeepAlive.MaxPings != 2 || d.KeepAlive.MinPrefixTokens != 4096 || len(d.KeepAlive.Models) != 0 {
		t.Errorf("defaults: %+v", d.KeepAlive)
	}
	file := writeFile(t, "keepalive:\n  enabled: true\n  models: [\"claude-*\"]\n  max_pings: 3\n  min_prefix_tokens: 1000\n")
	cases := []struct {
		name    string
		args    []string
		environ []string
	}{
		{"file", []string{"--config", file}, nil},
		{"environment", nil, []string{"CONDENSE_KEEPALIVE_ENABLED=true", "CONDENSE_KEEPALIVE_MODELS=claude-*",
			"CONDENSE_KEEPALIVE_MAX_PINGS=3", "CONDENSE_KEEPALIVE_MIN_PREFIX_TOKENS=1000"}},
		{"flags", []string{"--keepalive", "--keepalive-models", "claude-*", "--keepalive-max-pings", "3",
			"--keepalive-min-prefix-tokens", "1000"}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Load(flags(t, tc.args...), withUpstream(tc.environ...))
			if err != nil {
				t.Fatal(err)
			}
			k := c.KeepAlive
			if !k.Enabled || strings.Join(k.Models, ",") != "claude-*" || k.MaxPings != 3 || k.MinPrefixTokens != 1000 {
				t.Errorf("got %+v", k)
			}
		})
	}
	bad := Defaults()
	bad.KeepAlive = KeepAlive{Models: []string{"claude-[", " "}, MaxPings: 0, MinPrefixTokens: -1}
	err := bad.Validate()
	for _, want := range []string{"keepalive.max_pings", "keepalive.min_prefix_tokens", "keepalive.models[0]", "keepalive.models[1]"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate = %v, want %s named", err, want)
		}
	}
}

func TestMatchModel(t *testing.T) {
	cases := []struct {
		name, glob, model string
		want              bool
	}{
		{"bare", "claude-*", "claude-sonnet-4-5", true},
		{"provider prefix", "claude-*", "anthropic/claude-sonnet-4-5", true},
		{"case", "Claude-*", "CLAUDE-opus-4", true},
		{"other family", "claude-*", "gpt-5", false},
		{"full name", "openrouter/*", "openrouter/gpt-5", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := MatchModel(tc.glob, tc.model); got != tc.want {
				t.Errorf("MatchModel(%q, %q) = %v", tc.glob, tc.model, got)
			}
		})
	}
}
