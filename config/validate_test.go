package config

import (
	"math"
	"strings"
	"testing"
	"time"
)

// TestEveryNumberInRange: for every numeric key of the table, a value
// just outside its range (and NaN and ±Inf for fractions) is refused, the
// error naming the key; the bounds themselves are accepted by the range
// check.
func TestEveryNumberInRange(t *testing.T) {
	for _, k := range Table() {
		var outside []any
		switch k.Kind {
		case KindInt:
			outside = []any{int(k.Min) - 1, int(k.Max) + 1, math.MaxInt}
		case KindBytes:
			outside = []any{int64(k.Min) - 1, int64(k.Max) + 1, int64(math.MaxInt64)}
		case KindFloat:
			outside = []any{k.Min - 0.01, k.Max + 0.01, math.NaN(), math.Inf(1), math.Inf(-1)}
		case KindDuration:
			outside = []any{time.Duration(k.Min) - 1, time.Duration(k.Max) + 1, time.Duration(math.MaxInt64)}
		default:
			continue
		}
		for _, v := range outside {
			c := Defaults()
			k.set(&c, v)
			err := c.Validate()
			if err == nil || !strings.Contains(err.Error(), k.Name+":") {
				t.Errorf("%s = %v: %v, want it refused by name", k.Name, v, err)
			}
		}
		for _, bound := range []float64{k.Min, k.Max} {
			var v any
			switch k.Kind {
			case KindInt:
				v = int(bound)
			case KindBytes:
				v = int64(bound)
			case KindFloat:
				v = bound
			case KindDuration:
				v = time.Duration(bound)
			}
			if err := k.checkRange(v); err != nil {
				t.Errorf("%s = %v (a bound): %v", k.Name, v, err)
			}
		}
	}
}

// TestAbsurdNumbersRefused: the values issue 17 found accepted, as an
// operator writes them, and every bad key named at once.
func TestAbsurdNumbersRefused(t *testing.T) {
	tests := []struct {
		name string
		yaml string
		env  []string
		want []string
	}{
		{"threshold NaN", "condense:\n  threshold: .nan\n", nil, []string{"condense.threshold: must be a finite number"}},
		{"target infinite", "condense:\n  target: .inf\n", nil, []string{"condense.target: must be a finite number"}},
		{"threshold NaN from the environment", "", []string{"CONDENSE_CONDENSE_THRESHOLD=NaN"}, []string{"condense.threshold"}},
		{"model window at MaxInt64", "models:\n  - match: \"gpt-4o*\"\n    context_window: 9223372036854775807\n", nil, []string{"models[0].context_window"}},
		{"model numbers NaN", "models:\n  - match: \"x*\"\n    threshold: .nan\n    safety_factor: .nan\n    cache_read: .nan\n    cache_write: .nan\n    max_output_tokens: 99999999999\n",
			nil, []string{"models[0].threshold", "models[0].safety_factor", "models[0].cache_read", "models[0].cache_write", "models[0].max_output_tokens"}},
		{"default window absurd", "default_context_window: 9223372036854775807\n", nil, []string{"default_context_window"}},
		{"sizes over 1 TiB", "cache_max_bytes: 2000000000000\nmax_body_bytes: 9223372036854775807\n", nil, []string{"cache_max_bytes", "max_body_bytes"}},
		{"durations absurd", "condense:\n  summary_timeout: 1000000h\n  originals_ttl: 1ns\n", nil, []string{"condense.summary_timeout", "condense.originals_ttl"}},
		{"all at once", "default_context_window: -5\ncondense:\n  threshold: .nan\n  chunk_tokens: 99999999999\n  keep_recent_turns: 0\nui:\n  max_conversations: 9999999999\nmodels:\n  - match: \"a*\"\n    context_window: 9223372036854775807\n  - match: \"b*\"\n    threshold: 7\n",
			nil, []string{"default_context_window", "condense.threshold", "condense.chunk_tokens", "condense.keep_recent_turns", "ui.max_conversations", "models[0].context_window", "models[1].threshold"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fs := flags(t)
			if tc.yaml != "" {
				fs = flags(t, "--config", writeFile(t, tc.yaml))
			}
			_, err := Load(fs, withUpstream(tc.env...))
			if err == nil {
				t.Fatal("accepted")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error does not name %q:\n%v", w, err)
				}
			}
			// One line per bad key: a key is not reported twice.
			for _, w := range tc.want {
				if n := strings.Count(err.Error(), w+":"); n > 1 {
					t.Errorf("%s reported %d times:\n%v", w, n, err)
				}
			}
		})
	}
}
