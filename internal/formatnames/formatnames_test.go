package formatnames

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// names are wire formats' field names, values and event types: what only
// a codec may spell.
var names = []string{
	"tool_use", "tool_result", "cache_control", "input_text", "output_text",
	"function_call_output", "function_call", "cache_read_input_tokens",
	"cache_creation_input_tokens", "prompt_tokens_details", "input_tokens_details",
	"completion_tokens_details", "tool_calls", "tool_call_id", "context_management",
	"finish_reason", "stop_reason", "content_block_delta", "reasoning_content",
	"max_completion_tokens", "max_output_tokens", "max_tokens", "response.completed",
	"cached_tokens",
	// Gemini's
	"functionCall", "functionResponse", "functionDeclarations", "thoughtSignature", "usageMetadata",
	"cachedContentTokenCount", "promptTokenCount", "maxOutputTokens", "generationConfig", "systemInstruction",
}

// matcher returns the names s holds as whole tokens: not inside a longer
// identifier (cache_max_bytes, selective.keep_recent_tool_outputs), but
// as a JSON key or value, a segment of a gjson path or a word of a
// message.
func matcher(names []string) func(s string) []string {
	res := make([]*regexp.Regexp, len(names))
	for i, n := range names {
		res[i] = regexp.MustCompile(`(?:^|[^A-Za-z0-9_])` + regexp.QuoteMeta(n) + `(?:$|[^A-Za-z0-9_])`)
	}
	return func(s string) []string {
		var found []string
		for i, re := range res {
			if re.MatchString(s) {
				found = append(found, names[i])
			}
		}
		return found
	}
}

// root is the module's root, where go.mod is.
func root(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		up := filepath.Dir(dir)
		if up == dir {
			t.Fatal("no go.mod above the test")
		}
		dir = up
	}
}

// offence is a string literal naming a format's field.
type offence struct {
	file string // relative to the module
	pos  string // file:line
	name string
}

// inspectLit reports a string literal's value.
func inspectLit(n ast.Node, report func(*ast.BasicLit, string)) bool {
	lit, ok := n.(*ast.BasicLit)
	if !ok || lit.Kind != token.STRING {
		return true
	}
	s, err := strconv.Unquote(lit.Value)
	if err != nil {
		s = lit.Value
	}
	report(lit, s)
	return true
}

// offences parses every non-test .go file under dir outside codec/ and
// internal/ (and testdata) and returns the string literals naming one of
// the names. Of a struct tag only the json key counts: the others
// (mapstructure, yaml) name config keys, which may coincide with a wire
// name (a model's max output tokens, as LiteLLM's model_info spells it).
func offences(t *testing.T, dir string, match func(string) []string) []offence {
	t.Helper()
	var out []offence
	fset := token.NewFileSet()
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			switch {
			case rel == "codec", rel == "internal", d.Name() == "testdata", rel != "." && strings.HasPrefix(d.Name(), "."):
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(rel, ".go") || strings.HasSuffix(rel, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		report := func(lit *ast.BasicLit, s string) {
			for _, name := range match(s) {
				p := fset.Position(lit.Pos())
				out = append(out, offence{file: rel, pos: rel + ":" + strconv.Itoa(p.Line), name: name})
			}
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if field, ok := n.(*ast.Field); ok && field.Tag != nil {
				if tag, err := strconv.Unquote(field.Tag.Value); err == nil {
					report(field.Tag, reflect.StructTag(tag).Get("json"))
				}
				if field.Type != nil {
					ast.Inspect(field.Type, func(n ast.Node) bool { return inspectLit(n, report) })
				}
				return false
			}
			return inspectLit(n, report)
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].pos < out[j].pos })
	return out
}

// TestNoFormatNamesOutsideCodecs: no string of a non-test file outside
// codec/ and internal/ names a wire format's field: the codecs own every
// byte of a format, so a new format is a codec, a route and registry
// entries.
func TestNoFormatNamesOutsideCodecs(t *testing.T) {
	for _, o := range offences(t, root(t), matcher(names)) {
		t.Errorf("%s: a string names the wire format's %q; move it into a codec", o.pos, o.name)
	}
}

// TestMatcher: whole tokens only — a JSON key, a gjson path's segment, an
// event type — never part of a longer name.
func TestMatcher(t *testing.T) {
	match := matcher(names)
	for s, want := range map[string]bool{
		"tool_use":                           true,
		`{"type":"tool_use"}`:                true,
		"usage.cache_read_input_tokens":      true,
		"choices.#.finish_reason":            true,
		"event: response.completed":          true,
		"setting max_tokens":                 true,
		"selective.keep_recent_tool_outputs": false,
		"cache_max_bytes":                    false,
		"summary_max_tokens":                 false,
		"response.completed_at":              false,
		"tool_uses":                          false,
		`"(?:thinking|tool_result)"`:         true,
	} {
		if got := len(match(s)) > 0; got != want {
			t.Errorf("%q: match %v, want %v", s, got, want)
		}
	}
}

// TestOffences: the walk reports a literal and a json tag naming a
// field, file and line, outside codec/ and internal/ only, and never a
// test file or a config key's tag.
func TestOffences(t *testing.T) {
	dir := t.TempDir()
	write := func(rel, src string) {
		t.Helper()
		p := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("proxy/p.go", "package proxy\n\ntype T struct {\n\tA int `json:\"tool_calls\"`\n\tB int `mapstructure:\"max_output_tokens\"`\n}\n\nvar x = `{\"max_tokens\":1}`\n")
	write("proxy/p_test.go", "package proxy\n\nvar y = \"tool_use\"\n")
	write("codec/c/c.go", "package c\n\nvar z = \"tool_use\"\n")
	write("internal/i/i.go", "package i\n\nvar z = \"tool_use\"\n")
	got := offences(t, dir, matcher(names))
	want := []offence{{"proxy/p.go", "proxy/p.go:4", "tool_calls"}, {"proxy/p.go", "proxy/p.go:8", "max_tokens"}}
	if !slices.Equal(got, want) {
		t.Errorf("offences %+v, want %+v", got, want)
	}
}
