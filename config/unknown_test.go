package config

import (
	"strings"
	"testing"
)

// TestUnknownKeysRefused: a YAML key the config does not know — a typo,
// a key in the wrong section, a model entry's misspelt field — refuses
// the file, naming the key and the nearest known one.
func TestUnknownKeysRefused(t *testing.T) {
	tests := []struct {
		name string
		yaml string
		want []string
	}{
		{"typo in a section", "condense:\n  treshold: 0.6\n", []string{"condense.treshold: unknown key (did you mean condense.threshold?)"}},
		{"typo at the top", "treshold: 0.6\n", []string{"treshold: unknown key (did you mean condense.threshold?)"}},
		{"key in the wrong section", "keep_recent_turns: 4\n", []string{"keep_recent_turns: unknown key (did you mean condense.keep_recent_turns?)"}},
		{"misspelt section", "condence:\n  threshold: 0.6\n", []string{"condence: unknown key (did you mean condense"}},
		{"misspelt top-level key", "redis_ulr: redis://x:6379\n", []string{"redis_ulr: unknown key (did you mean redis_url?)"}},
		{"nothing near", "frobnicate: 1\n", []string{"frobnicate: unknown key (see condense-proxy serve --help"}},
		{"model entry field", "models:\n  - match: \"x*\"\n    contxt_window: 1000\n", []string{"models[0].contxt_window: unknown key (did you mean context_window?)"}},
		{"section not a mapping", "condense: 5\n", []string{"condense: must hold keys"}},
		{"several at once", "condense:\n  treshold: 0.6\n  targt: 0.4\nselective:\n  enabeld: false\n",
			[]string{"condense.treshold", "condense.targt", "selective.enabeld: unknown key (did you mean selective.enabled?)"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Load(flags(t, "--config", writeFile(t, tc.yaml)), withUpstream())
			if err == nil {
				t.Fatal("accepted")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error lacks %q:\n%v", w, err)
				}
			}
		})
	}
	// Known keys in any case, and an empty section, are fine.
	for _, ok := range []string{"condense:\n", "Condense:\n  Threshold: 0.7\n", "models:\n  - match: \"x*\"\n    Context_Window: 1000\n"} {
		if _, err := Load(flags(t, "--config", writeFile(t, ok)), withUpstream()); err != nil {
			t.Errorf("%q refused: %v", ok, err)
		}
	}
}

// TestUnknownEnvWarned: CONDENSE_* variables that set no key are
// accepted, and each is named once in the warnings with the nearest
// variable; the project's other variables and other programs' are not.
func TestUnknownEnvWarned(t *testing.T) {
	c, err := Load(nil, withUpstream("CONDENSE_TRESHOLD=0.5", "CONDENSE_CONDENSE_THRESHOLD=0.7", "CONDENSE_REDIS_ULR=redis://x:1",
		"CONDENSE_SOAK=1m", "CONDENSE_CONFIG=", "HOME=/root", "CONDENSE_QQQQQQQQQQQQQ=1"))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"CONDENSE_QQQQQQQQQQQQQ (see condense-proxy serve --help for the keys)",
		"CONDENSE_REDIS_ULR (did you mean CONDENSE_REDIS_URL?)",
		"CONDENSE_TRESHOLD (did you mean CONDENSE_CONDENSE_THRESHOLD?)",
	}
	if strings.Join(c.Warnings, "\n") != strings.Join(want, "\n") {
		t.Errorf("warnings:\n%s\nwant:\n%s", strings.Join(c.Warnings, "\n"), strings.Join(want, "\n"))
	}
}

// TestEveryKindOfProblemAtOnce: a typo, a value that does not parse and
// a number out of range are all named in one error, each key once.
func TestEveryKindOfProblemAtOnce(t *testing.T) {
	file := writeFile(t, "condense:\n  treshold: 0.6\n  chunk_tokens: 99999999999\n  max_wait: soon\n")
	_, err := Load(flags(t, "--config", file), withUpstream("CONDENSE_SHUTDOWN_GRACE=later", "CONDENSE_CONDENSE_TARGET=NaN"))
	if err == nil {
		t.Fatal("accepted")
	}
	for _, key := range []string{"condense.treshold:", "condense.chunk_tokens:", "condense.max_wait:", "shutdown_grace:", "condense.target:"} {
		if n := strings.Count(err.Error(), key); n != 1 {
			t.Errorf("%s named %d times:\n%v", key, n, err)
		}
	}
}
