package config

import (
	"slices"
	"strings"
)

// Where values come from, and the defaults that follow other keys.

// sources maps a key (dotted, or "models") to where its value came
// from: "flag --threshold", "environment variable CONDENSE_…", "file
// PATH". A key that is not in it has its default. A nil sources (a
// Config built in code) knows nothing.
type sources map[string]string

// of is " (from SOURCE)" for key, or "" when the key has its default or
// the source is unknown. An indexed key (scope_headers[1],
// models[0].threshold) is its list's.
func (s sources) of(key string) string {
	if i := strings.IndexByte(key, '['); i >= 0 {
		key = key[:i]
	}
	if src, ok := s[key]; ok {
		return " (from " + src + ")"
	}
	return ""
}

// fileKeys lists the configuration keys a config file's mapping sets
// (dotted; "models" for the model entries), unknown keys left out.
func fileKeys(m map[string]any) []string {
	var out []string
	var walk func(m map[string]any, prefix string)
	walk = func(m map[string]any, prefix string) {
		for name, val := range m {
			full := prefix + strings.ToLower(name)
			if _, ok := Lookup(full); ok || full == "models" {
				out = append(out, full)
				continue
			}
			if sub, ok := val.(map[string]any); ok {
				walk(sub, full+".")
			}
		}
	}
	walk(m, "")
	slices.Sort(out)
	return out
}

// A dependent is a key whose default follows another key: when the user
// sets on and not key, key's value is derived from on's, so that setting
// one key alone never makes a default the user did not write contradict
// it. A pair both set is taken as written (and refused by Validate when
// it contradicts itself).
type dependent struct {
	key, on string
	derive  func(c *Config)
}

// dependents are every such pair. condense.prepare_threshold and
// condense.target need none: unset (0), each follows each model's own
// threshold — the threshold - 0.1 (the engine's), and 5/8 of it, at most
// 0.5 (TargetFor) — so a model whose entry sets a threshold below the
// others' gets a target below its own.
var dependents = []dependent{
	// A decoded body is bounded by the smaller of the two limits: a
	// larger max_body_bytes raises max_decompressed_bytes with it, or
	// compressed bodies would be held to less than plain ones.
	{"max_decompressed_bytes", "max_body_bytes", func(c *Config) {
		k, _ := Lookup("max_decompressed_bytes")
		c.MaxDecompressedBytes = max(k.Default.(int64), c.MaxBodyBytes)
	}},
	// One conversation's memory fits in the whole store.
	{"memory.max_conversation_bytes", "memory.max_bytes", func(c *Config) {
		k, _ := Lookup("memory.max_conversation_bytes")
		c.Memory.MaxConversationBytes = min(k.Default.(int64), c.Memory.MaxBytes)
	}},
}

// follow derives every dependent key the user left unset from the key it
// follows, when that one was set.
func (c *Config) follow(from sources) {
	for _, d := range dependents {
		_, keySet := from[d.key]
		_, onSet := from[d.on]
		if onSet && !keySet {
			d.derive(c)
		}
	}
}
