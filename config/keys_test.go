package config

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// leafFields lists the addresses of Config's settable fields (structs
// walked into; Models and Warnings are not keys), by Go path.
func leafFields(v reflect.Value, path string, out map[uintptr]string) {
	t := v.Type()
	for i := range t.NumField() {
		f, fv := t.Field(i), v.Field(i)
		name := path + f.Name
		if name == "Models" || name == "Warnings" {
			continue
		}
		if f.Type.Kind() == reflect.Struct {
			leafFields(fv, name+".", out)
			continue
		}
		out[fv.Addr().Pointer()] = name
	}
}

// TestTableIsTheOnlySource: every field of Config is set by exactly one
// row of the keys table, and the defaults, flags, environment names and
// list kinds all come from that row.
func TestTableIsTheOnlySource(t *testing.T) {
	var c Config
	fields := map[uintptr]string{}
	leafFields(reflect.ValueOf(&c).Elem(), "", fields)
	seen := map[uintptr]string{}
	names, flagNames := map[string]bool{}, map[string]bool{}
	fs := flags(t)
	d := Defaults()
	for _, k := range Table() {
		p := reflect.ValueOf(k.field(&c)).Pointer()
		if _, ok := fields[p]; !ok {
			t.Errorf("%s: its field is not a field of Config", k.Name)
		}
		if other, dup := seen[p]; dup {
			t.Errorf("%s and %s set the same field", k.Name, other)
		}
		seen[p] = k.Name
		if names[k.Name] || flagNames[k.Flag] {
			t.Errorf("%s (--%s): name or flag used twice", k.Name, k.Flag)
		}
		names[k.Name], flagNames[k.Flag] = true, true
		if !reflect.DeepEqual(k.get(&d), k.Default) {
			t.Errorf("%s: Defaults() has %v, the table %v", k.Name, k.get(&d), k.Default)
		}
		fl := fs.Lookup(k.Flag)
		if fl == nil || fl.Usage != k.Usage {
			t.Errorf("%s: flag --%s not registered with its usage", k.Name, k.Flag)
		}
		if k.Env() != "CONDENSE_"+strings.ToUpper(strings.ReplaceAll(k.Name, ".", "_")) {
			t.Errorf("%s: env %s", k.Name, k.Env())
		}
		if _, isList := k.Default.([]string); isList != k.List() {
			t.Errorf("%s: list %v, default %T", k.Name, k.List(), k.Default)
		}
	}
	for p, name := range fields {
		if _, ok := seen[p]; !ok {
			t.Errorf("Config.%s has no row in the keys table", name)
		}
	}
}

// TestEveryKeyFromEverySource: each key of the table is read from its
// flag, its environment variable and the YAML file, lists split in the
// environment.
func TestEveryKeyFromEverySource(t *testing.T) {
	// A value unlike the default for each kind; valid for every key of it.
	sample := func(k Key) (text string, want any) {
		switch k.Kind {
		case KindBool:
			return "false", false
		case KindInt:
			return "7", 7
		case KindBytes:
			return "7777", int64(7777)
		case KindFloat:
			return "0.75", 0.75
		case KindDuration:
			return "7s", 7 * time.Second
		case KindList:
			return "A-b,C-d", []string{"A-b", "C-d"}
		}
		return "", nil
	}
	for _, k := range Table() {
		text, want := sample(k)
		if want == nil {
			continue // strings: validated per key, read like the rest
		}
		t.Run(k.Name, func(t *testing.T) {
			yaml := ""
			parts := strings.Split(k.Name, ".")
			for i, p := range parts {
				yaml += strings.Repeat("  ", i) + p + ":"
				if i < len(parts)-1 {
					yaml += "\n"
				}
			}
			yaml += " " + text + "\n"
			if k.List() {
				yaml = strings.Replace(yaml, text, "["+text+"]", 1)
			}
			for name, load := range map[string]func() (*Config, error){
				"flag": func() (*Config, error) { return Load(flags(t, "--"+k.Flag+"="+text), withUpstream()) },
				"env":  func() (*Config, error) { return Load(nil, withUpstream(k.Env()+"="+text)) },
				"yaml": func() (*Config, error) { return Load(flags(t, "--config", writeFile(t, yaml)), withUpstream()) },
			} {
				c, err := Load(nil, withUpstream())
				if err == nil {
					c, err = load()
				}
				if err != nil {
					// Cross-key rules may refuse a lone change (target
					// over threshold…): the value must still be read.
					if !strings.Contains(err.Error(), k.Name) {
						t.Errorf("%s: %v", name, err)
					}
					continue
				}
				if got := k.get(c); !reflect.DeepEqual(got, want) {
					t.Errorf("%s: got %v, want %v", name, got, want)
				}
			}
		})
	}
}

// TestConfigImportsNothingOfTheProject: config is a leaf; the wiring
// translates it into each package's options.
func TestConfigImportsNothingOfTheProject(t *testing.T) {
	files, _ := filepath.Glob("*.go")
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		af, err := parser.ParseFile(token.NewFileSet(), f, src, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, im := range af.Imports {
			if strings.HasPrefix(im.Path.Value, `"github.com/condense-proxy/`) {
				t.Errorf("%s imports %s", f, im.Path.Value)
			}
		}
	}
}
