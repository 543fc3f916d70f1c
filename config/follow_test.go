package config

import (
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	yaml "go.yaml.in/yaml/v3"
)

// setting is one key's value as an operator writes it.
type setting struct{ key, value string }

// loadVia loads settings given all through one source: "yaml" (a
// config file), "env" or "flag"; the upstream is set in the same source.
func loadVia(t *testing.T, source string, settings ...setting) (*Config, error) {
	t.Helper()
	settings = append([]setting{{"upstream", testUpstream}}, settings...)
	switch source {
	case "yaml":
		root := map[string]any{}
		for _, s := range settings {
			m := root
			parts := strings.Split(s.key, ".")
			for _, p := range parts[:len(parts)-1] {
				if _, ok := m[p]; !ok {
					m[p] = map[string]any{}
				}
				m = m[p].(map[string]any)
			}
			var v any
			if err := yaml.Unmarshal([]byte(s.value), &v); err != nil {
				t.Fatal(err)
			}
			m[parts[len(parts)-1]] = v
		}
		raw, err := yaml.Marshal(root)
		if err != nil {
			t.Fatal(err)
		}
		return Load(flags(t, "--config", writeFile(t, string(raw))), nil)
	case "env":
		var env []string
		for _, s := range settings {
			env = append(env, EnvName(s.key)+"="+s.value)
		}
		return Load(nil, env)
	case "flag":
		var args []string
		for _, s := range settings {
			k, ok := Lookup(s.key)
			if !ok {
				t.Fatalf("no key %s", s.key)
			}
			args = append(args, "--"+k.Flag+"="+s.value)
		}
		return Load(flags(t, args...), nil)
	}
	t.Fatalf("unknown source %s", source)
	return nil, nil
}

// sourceName is how an error names a key's source.
func sourceName(source, key string) string {
	switch source {
	case "env":
		return "environment variable " + EnvName(key)
	case "flag":
		k, _ := Lookup(key)
		return "flag --" + k.Flag
	}
	return "file "
}

var sources3 = []string{"yaml", "env", "flag"}

// TestDefaultsFollowTheKeysTheyDependOn: setting one key alone never
// makes another key's default (one the operator did not write)
// contradict it — condense.threshold: 0.6 alone used to be refused
// because prepare_threshold's default, 0.7, was above it. Each pair,
// from each source.
func TestDefaultsFollowTheKeysTheyDependOn(t *testing.T) {
	tests := []struct {
		name  string
		set   []setting
		check func(c *Config) string
	}{
		{"threshold 0.6 alone: prepare_threshold follows each model's threshold", []setting{{"condense.threshold", "0.6"}},
			func(c *Config) string {
				mi := NewRegistry(c, nil).Lookup("gpt-4o")
				if target := TargetFor(c.Condense.Target, mi.Threshold); mi.Threshold != 0.6 || c.Condense.PrepareThreshold != 0 || target != 0.375 {
					return "threshold, prepare_threshold, target = " + fmtFloats(mi.Threshold, c.Condense.PrepareThreshold, target) + ", want 0.6, 0 (each model's threshold - 0.1), 0.375 (5/8 of it)"
				}
				return ""
			}},
		{"threshold 0.4 alone: target follows below it", []setting{{"condense.threshold", "0.4"}},
			func(c *Config) string {
				if target := TargetFor(c.Condense.Target, NewRegistry(c, nil).Lookup("gpt-4o").Threshold); target != 0.25 {
					return "target = " + fmtFloats(target) + ", want 0.25 (5/8 of 0.4)"
				}
				return ""
			}},
		{"a model's threshold alone: prepare_threshold follows it", []setting{{"condense.threshold", "0.9"}},
			func(c *Config) string {
				mi := NewRegistry(c, nil).Lookup("gpt-4o")
				if mi.Threshold != 0.9 || c.Condense.PrepareThreshold != 0 {
					return "threshold " + fmtFloats(mi.Threshold, c.Condense.PrepareThreshold)
				}
				return ""
			}},
		{"max_body_bytes alone: max_decompressed_bytes follows above it", []setting{{"max_body_bytes", "268435456"}},
			func(c *Config) string {
				if c.MaxDecompressedBytes != 256<<20 {
					return "max_decompressed_bytes = " + fmtFloats(float64(c.MaxDecompressedBytes)) + ", want 268435456"
				}
				return ""
			}},
		{"memory.max_bytes alone: max_conversation_bytes follows below it", []setting{{"memory.max_bytes", "2097152"}},
			func(c *Config) string {
				if c.Memory.MaxConversationBytes != 2<<20 {
					return "memory.max_conversation_bytes = " + fmtFloats(float64(c.Memory.MaxConversationBytes)) + ", want 2097152"
				}
				return ""
			}},
		{"a pair set together is taken as written", []setting{{"condense.threshold", "0.6"}, {"condense.target", "0.55"}, {"condense.prepare_threshold", "0.58"}},
			func(c *Config) string {
				if c.Condense.Target != 0.55 || c.Condense.PrepareThreshold != 0.58 {
					return "target, prepare_threshold = " + fmtFloats(c.Condense.Target, c.Condense.PrepareThreshold)
				}
				return ""
			}},
	}
	for _, tc := range tests {
		for _, src := range sources3 {
			t.Run(tc.name+"/"+src, func(t *testing.T) {
				c, err := loadVia(t, src, tc.set...)
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				if msg := tc.check(c); msg != "" {
					t.Error(msg)
				}
			})
		}
	}
	// The built-in defaults are unchanged by the rules.
	d := Defaults()
	if d.Condense.Target != 0 || d.Condense.Threshold != 0 || d.MaxDecompressedBytes != 128<<20 || d.Memory.MaxConversationBytes != 8<<20 {
		t.Errorf("defaults changed: %+v", d.Condense)
	}
}

func fmtFloats(fs ...float64) string { return fmt.Sprint(fs) }

// pflagSet is serve's flag set, unparsed.
func pflagSet() *pflag.FlagSet {
	fs := pflag.NewFlagSet("serve", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	RegisterFlags(fs)
	return fs
}

// TestContradictoryPairsRefused: a pair the operator set both keys of,
// and that contradicts itself, is still refused; the error names the two
// keys and where each value came from.
func TestContradictoryPairsRefused(t *testing.T) {
	tests := []struct {
		name  string
		set   []setting
		key   string // the key refused
		other string // the key it contradicts
	}{
		{"prepare_threshold above threshold", []setting{{"condense.threshold", "0.6"}, {"condense.prepare_threshold", "0.7"}}, "condense.prepare_threshold", "condense.threshold"},
		{"target at threshold", []setting{{"condense.threshold", "0.6"}, {"condense.target", "0.6"}}, "condense.target", "condense.threshold"},
		{"conversation memory over the store", []setting{{"memory.max_bytes", "2097152"}, {"memory.max_conversation_bytes", "4194304"}}, "memory.max_conversation_bytes", "memory.max_bytes"},
	}
	for _, tc := range tests {
		for _, src := range sources3 {
			t.Run(tc.name+"/"+src, func(t *testing.T) {
				_, err := loadVia(t, src, tc.set...)
				if err == nil {
					t.Fatal("accepted")
				}
				msg := err.Error()
				for _, want := range []string{tc.key + ":", tc.other + "=", sourceName(src, tc.key), sourceName(src, tc.other)} {
					if !strings.Contains(msg, want) {
						t.Errorf("error does not say %q:\n%v", want, msg)
					}
				}
			})
		}
	}
	// A target set alone at or over the least threshold a model gets by
	// default is refused: the error says so and what to set.
	_, err := Load(flags(t, "--target", "0.6"), withUpstream())
	if err == nil || !strings.Contains(err.Error(), "condense.threshold unset") || !strings.Contains(err.Error(), "set it too") || !strings.Contains(err.Error(), "(from flag --target)") {
		t.Errorf("target over the default threshold: %v", err)
	}
	// A model's threshold at or under a target set for every model:
	// refused, and the error says how to fix it.
	_, err = Load(flags(t, "--config", writeFile(t, "condense:\n  target: 0.45\nmodels:\n  - match: \"x*\"\n    threshold: 0.4\n")), withUpstream())
	if err == nil || !strings.Contains(err.Error(), "models[0].threshold") || !strings.Contains(err.Error(), "set it below 0.4") {
		t.Errorf("model threshold under the target: %v", err)
	}
	// A model's threshold under an explicit prepare_threshold: refused.
	_, err = Load(flags(t, "--config", writeFile(t, "condense:\n  prepare_threshold: 0.75\nmodels:\n  - match: \"x*\"\n    threshold: 0.7\n")), withUpstream())
	if err == nil || !strings.Contains(err.Error(), "models[0].threshold") || !strings.Contains(err.Error(), "condense.prepare_threshold=0.75") {
		t.Errorf("model threshold under prepare_threshold: %v", err)
	}
	// With Redis the memory store is Redis: max_bytes does not bound a
	// conversation.
	if _, err := Load(nil, withUpstream("CONDENSE_REDIS_URL=redis://r:6379", "CONDENSE_MEMORY_MAX_BYTES=2097152", "CONDENSE_MEMORY_MAX_CONVERSATION_BYTES=4194304")); err != nil {
		t.Errorf("with Redis: %v", err)
	}
}

// TestErrorsNameTheirSource: a value that cannot be read, or is out of
// range, is named with where it came from: the flag, the environment
// variable or the file.
func TestErrorsNameTheirSource(t *testing.T) {
	for _, tc := range []struct{ value, want string }{{"abc", "cannot read"}, {"3", "must be in"}} {
		for _, src := range sources3 {
			t.Run(tc.value+"/"+src, func(t *testing.T) {
				if src == "flag" && tc.value == "abc" {
					// pflag refuses it while parsing, naming the flag.
					fs := pflagSet()
					if err := fs.Parse([]string{"--threshold", tc.value}); err == nil || !strings.Contains(err.Error(), `"--threshold" flag`) {
						t.Errorf("flag: %v", err)
					}
					return
				}
				_, err := loadVia(t, src, setting{"condense.threshold", tc.value})
				if err == nil {
					t.Fatal("accepted")
				}
				want := "condense.threshold: " + tc.want
				if !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "(from "+sourceName(src, "condense.threshold")) {
					t.Errorf("error does not name the key and its source:\n%v", err)
				}
			})
		}
	}
	// The file's source names the file.
	file := writeFile(t, "upstream: http://u:1\nscope_headers: [\"bad header\"]\n")
	_, err := Load(flags(t, "--config", file), nil)
	if err == nil || !strings.Contains(err.Error(), "scope_headers[0]") || !strings.Contains(err.Error(), "(from file "+file+")") {
		t.Errorf("file value: %v", err)
	}
	// An unknown key of the file names the file too.
	file = writeFile(t, "upstream: http://u:1\ncondense:\n  treshold: 0.6\n")
	_, err = Load(flags(t, "--config", file), nil)
	if err == nil || !strings.Contains(err.Error(), "condense.treshold: unknown key (did you mean condense.threshold?) (in file "+file+")") {
		t.Errorf("unknown key: %v", err)
	}
	// The environment beats the file: an error names the variable.
	file = writeFile(t, "upstream: http://u:1\nmax_body_bytes: 5\n")
	_, err = Load(flags(t, "--config", file), []string{"CONDENSE_MAX_BODY_BYTES=-1"})
	if err == nil || !strings.Contains(err.Error(), "(from environment variable CONDENSE_MAX_BODY_BYTES)") {
		t.Errorf("env over file: %v", err)
	}
}

// TestUpstreamRequired: without an upstream the proxy does not start
// (it used to forward to https://api.openai.com, with whatever key the
// caller sent); the error says the three ways to set it.
func TestUpstreamRequired(t *testing.T) {
	_, err := Load(nil, nil)
	if err == nil {
		t.Fatal("loaded without an upstream")
	}
	for _, want := range []string{"upstream: not set", "--upstream", "CONDENSE_UPSTREAM", "upstream: in the config file"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not say %q:\n%v", want, err)
		}
	}
	d := Defaults()
	if d.Upstream != "" || d.Validate() == nil {
		t.Errorf("Defaults() has upstream %q and validates", d.Upstream)
	}
	for _, src := range sources3 {
		c, err := loadVia(t, src)
		if err != nil || c.Upstream != testUpstream {
			t.Errorf("%s: upstream %q, %v", src, c.Upstream, err)
		}
	}
	if k, _ := Lookup("upstream"); !k.Required || k.DefaultText() != "required" {
		t.Errorf("upstream: required %v, default text %q", k.Required, k.DefaultText())
	}
}

// TestFlagErrorSuggests: an unknown flag gets the nearest one, as an
// unknown YAML key or environment variable does.
func TestFlagErrorSuggests(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--treshold", "0.6"}, "unknown flag: --treshold (did you mean --threshold?)"},
		{[]string{"--upstrem=http://x:1"}, "(did you mean --upstream?)"},
		{[]string{"-threshold", "0.6"}, "(did you mean --threshold?)"},
		{[]string{"--qqqqqqqqqqqq"}, "unknown flag: --qqqqqqqqqqqq (see --help for the flags)"},
	} {
		fs := pflagSet()
		err := FlagError(fs, fs.Parse(tc.args))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want %q", tc.args, err, tc.want)
		}
	}
	fs := pflagSet()
	if err := FlagError(fs, fs.Parse([]string{"--threshold", "abc"})); err == nil || strings.Contains(err.Error(), "did you mean") {
		t.Errorf("a bad value of a known flag: %v", err)
	}
}
