package config

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/spf13/pflag"
)

// Keys the config does not know: a YAML key is refused (a typo would
// otherwise leave the default in force without a word), an environment
// variable CONDENSE_* is warned about (the environment holds other
// programs' variables too).

// otherEnv are CONDENSE_* variables of the project that are not config
// keys: the test suite's (README's Tests section) and docker-compose.yml's
// (CONDENSE_BIND).
var otherEnv = []string{"CONDENSE_CONFIG", "CONDENSE_BIND", "CONDENSE_SOAK", "CONDENSE_AGENTS_DIR", "CONDENSE_AGENTS_DUMP", "CONDENSE_CLAUDE_BIN", "CONDENSE_CODEX_BIN"}

// modelFields are the keys of a models[] entry, from ModelConfig's tags.
var modelFields = func() []string {
	var out []string
	t := reflect.TypeFor[ModelConfig]()
	for i := range t.NumField() {
		if tag := t.Field(i).Tag.Get("mapstructure"); tag != "" {
			out = append(out, tag)
		}
	}
	return out
}()

// sections are the dotted keys' parents: condense, selective, auth, ui.
func sections() []string {
	var out []string
	for _, k := range table {
		if i := strings.LastIndexByte(k.Name, '.'); i >= 0 && !slices.Contains(out, k.Name[:i]) {
			out = append(out, k.Name[:i])
		}
	}
	return out
}

// unknownKeys reports every key of a config file's top-level mapping that
// is not a configuration key, with the nearest known key.
func unknownKeys(m map[string]any) []error {
	var errs []error
	var known []string
	for _, k := range table {
		known = append(known, k.Name)
	}
	secs := sections()
	candidates := append(append(slices.Clone(known), secs...), "models")
	var walk func(m map[string]any, prefix string)
	walk = func(m map[string]any, prefix string) {
		names := make([]string, 0, len(m))
		for k := range m {
			names = append(names, k)
		}
		slices.Sort(names)
		for _, name := range names {
			full := prefix + strings.ToLower(name)
			val := m[name]
			switch {
			case slices.Contains(known, full):
			case full == "models":
				errs = append(errs, unknownModelKeys(val)...)
			case slices.Contains(secs, full):
				switch sub := val.(type) {
				case map[string]any:
					walk(sub, full+".")
				case nil:
				default:
					errs = append(errs, fmt.Errorf("%s: must hold keys (%s.…), got %v", full, full, val))
				}
			default:
				errs = append(errs, fmt.Errorf("%s: unknown key%s", full, suggest(full, candidates)))
			}
		}
	}
	walk(m, "")
	return errs
}

// unknownModelKeys reports the unknown keys of models[] entries.
func unknownModelKeys(v any) []error {
	list, ok := v.([]any)
	if !ok {
		if v == nil {
			return nil
		}
		return []error{fmt.Errorf("models: must be a list of entries, got %v", v)}
	}
	var errs []error
	for i, e := range list {
		entry, ok := e.(map[string]any)
		if !ok {
			errs = append(errs, fmt.Errorf("models[%d]: must be an entry (match: …, context_window: …), got %v", i, e))
			continue
		}
		names := make([]string, 0, len(entry))
		for k := range entry {
			names = append(names, k)
		}
		slices.Sort(names)
		for _, k := range names {
			if !slices.Contains(modelFields, strings.ToLower(k)) {
				errs = append(errs, fmt.Errorf("models[%d].%s: unknown key%s", i, k, suggest(strings.ToLower(k), modelFields)))
			}
		}
	}
	return errs
}

// unknownEnv returns the CONDENSE_* variables of env that set no key,
// each with the nearest known variable, sorted.
func unknownEnv(env map[string]string) []string {
	var keys []string
	for _, k := range table {
		keys = append(keys, k.Name)
	}
	var out []string
	for name := range env {
		if slices.Contains(otherEnv, name) {
			continue
		}
		if _, ok := keyOfEnv(name); ok {
			continue
		}
		hint := " (see condense-proxy serve --help for the keys)"
		if k, ok := nearest(strings.ToLower(strings.TrimPrefix(name, EnvPrefix+"_")), keys); ok {
			hint = " (did you mean " + EnvName(k) + "?)"
		}
		out = append(out, name+hint)
	}
	slices.Sort(out)
	return out
}

// keyOfEnv returns the key the environment variable name sets.
func keyOfEnv(name string) (Key, bool) {
	for _, k := range table {
		if k.Env() == name {
			return k, true
		}
	}
	return Key{}, false
}

// suggest returns " (did you mean X?)" with the candidate nearest to
// name, or a pointer to the list of keys when none is near.
func suggest(name string, candidates []string) string {
	if c, ok := nearest(name, candidates); ok {
		return " (did you mean " + c + "?)"
	}
	return " (see condense-proxy serve --help for the keys)"
}

// nearest returns the candidate nearest to name — by the whole dotted
// name (dots or underscores), or by its last part, so a key in the wrong
// section finds its place — and whether it is near enough to be meant.
// Ties go to the earlier candidate.
func nearest(name string, candidates []string) (string, bool) {
	leaf := func(s string) string { return s[strings.LastIndexByte(s, '.')+1:] }
	best, bestD := "", 1<<30
	for _, c := range candidates {
		d := min(distance(name, c), distance(name, strings.ReplaceAll(c, ".", "_")), distance(leaf(name), leaf(c)))
		if d < bestD {
			best, bestD = c, d
		}
	}
	return best, best != "" && bestD <= max(2, len(leaf(name))/3)
}

// distance is the Levenshtein distance between a and b (bytes).
func distance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// FlagError adds to a flag set's parse error, when it names a flag fs
// does not have (--treshold, or -threshold read as shorthands), the
// nearest flag fs has: "unknown flag: --treshold (did you mean
// --threshold?)". Other errors are returned as they are.
func FlagError(fs *pflag.FlagSet, err error) error {
	var ne *pflag.NotExistError
	if !errors.As(err, &ne) {
		return err
	}
	name := ne.GetSpecifiedName()
	if sh := ne.GetSpecifiedShortnames(); len(sh) > 1 {
		name = sh // -threshold: one dash too few
	}
	var names []string
	fs.VisitAll(func(f *pflag.Flag) {
		if !f.Hidden {
			names = append(names, f.Name)
		}
	})
	if c, ok := nearest(strings.ToLower(name), names); ok {
		return fmt.Errorf("%w (did you mean --%s?)", err, c)
	}
	return fmt.Errorf("%w (see --help for the flags)", err)
}
