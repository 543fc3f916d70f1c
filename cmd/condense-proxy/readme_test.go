package main

import (
	"bytes"
	"context"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/condense-proxy/condense-proxy/config"
)

var update = flag.Bool("update", false, "rewrite the demo's sample session (TestDemoSessionIsSynthetic)")

// root is the module's root, from this package's folder.
const root = "../.."

// docFiles are README.md, BENCHMARKS.md and docs/*.md, by their path
// from the root.
func docFiles(t *testing.T) map[string]string {
	t.Helper()
	files := map[string]string{}
	paths, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range append([]string{filepath.Join(root, "README.md"), filepath.Join(root, "BENCHMARKS.md")}, paths...) {
		raw, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(root, p)
		files[filepath.ToSlash(rel)] = string(raw)
	}
	return files
}

// TestREADMEIsShort: the front page stays a front page.
func TestREADMEIsShort(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(raw), "\n"); n > 300 {
		t.Errorf("README.md has %d lines; keep it under 300 and put reference in docs/", n)
	}
}

// TestServeHelpListsEveryKey: serve --help has one flag per key of the
// keys table, in its order (docs/configuration.md is generated from the
// same table: config/gen).
func TestServeHelpListsEveryKey(t *testing.T) {
	help := helpOf(t, "serve")
	var order []string
	for _, f := range regexp.MustCompile(`(?m)^\s+(?:-\w, )?--([a-z-]+)`).FindAllStringSubmatch(help, -1) {
		if f[1] != "config" && f[1] != "help" {
			order = append(order, f[1])
		}
	}
	var want []string
	for _, k := range config.Table() {
		want = append(want, k.Flag)
	}
	if strings.Join(order, " ") != strings.Join(want, " ") {
		t.Errorf("serve --help lists\n%s\nthe keys table\n%s", strings.Join(order, " "), strings.Join(want, " "))
	}
}

// helpOf is what `condense-proxy <sub> --help` prints.
func helpOf(t *testing.T, sub string) string {
	t.Helper()
	var out, errb bytes.Buffer
	if err := Main(context.Background(), []string{sub, "--help"}, &out, &errb, nil); err != nil {
		t.Fatalf("%s --help: %v", sub, err)
	}
	return out.String() + errb.String()
}

var (
	linkRE    = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	headingRE = regexp.MustCompile(`(?m)^#{1,6} (.+)$`)
	fenceRE   = regexp.MustCompile("(?s)```.*?```")
)

// anchors are the heading anchors GitHub makes for a Markdown file.
func anchors(md string) map[string]bool {
	out := map[string]bool{}
	seen := map[string]int{}
	for _, m := range headingRE.FindAllStringSubmatch(fenceRE.ReplaceAllString(md, ""), -1) {
		var b strings.Builder
		for _, r := range strings.ToLower(strings.TrimSpace(m[1])) {
			switch {
			case r == ' ':
				b.WriteRune('-')
			case r == '-' || r == '_' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r > 127 && r != '—' && r != '–' && r != '…' && r != '→':
				b.WriteRune(r)
			}
		}
		a := b.String()
		if n := seen[a]; n > 0 {
			out[a+"-"+string(rune('0'+n))] = true
		} else {
			out[a] = true
		}
		seen[a]++
	}
	return out
}

// TestDocsLinksResolve: every relative link of README.md and docs/*.md
// names a file or folder that exists, and its anchor a heading there.
func TestDocsLinksResolve(t *testing.T) {
	files := docFiles(t)
	for name, md := range files {
		for _, m := range linkRE.FindAllStringSubmatch(fenceRE.ReplaceAllString(md, ""), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			path, anchor, _ := strings.Cut(target, "#")
			dest := name
			if path != "" {
				dest = filepath.ToSlash(filepath.Clean(filepath.Join(filepath.Dir(name), path)))
				if _, err := os.Stat(filepath.Join(root, dest)); err != nil {
					t.Errorf("%s links to %s: no such file", name, target)
					continue
				}
			}
			if anchor == "" {
				continue
			}
			md, ok := files[dest]
			if !ok {
				raw, err := os.ReadFile(filepath.Join(root, dest))
				if err != nil {
					t.Errorf("%s links to %s: %v", name, target, err)
					continue
				}
				md = string(raw)
			}
			if !anchors(md)[anchor] {
				t.Errorf("%s links to %s: %s has no heading #%s", name, target, dest, anchor)
			}
		}
	}
}

// command is one `go run` or `go test` command named in the docs.
type command struct {
	file, text string
	env        []string // VAR=value before it
	args       []string // after go
}

var inlineCmdRE = regexp.MustCompile("`((?:[A-Z_]+=\\S+ )*go (?:run|test) [^`]+)`")

// commands finds the go run and go test commands of the docs: lines of
// fenced blocks and inline code.
func commands(t *testing.T) []command {
	t.Helper()
	var out []command
	for name, md := range docFiles(t) {
		var lines []string
		for _, block := range fenceRE.FindAllString(md, -1) {
			lines = append(lines, strings.Split(strings.ReplaceAll(block, "\\\n", " "), "\n")...)
		}
		for _, m := range inlineCmdRE.FindAllStringSubmatch(fenceRE.ReplaceAllString(md, ""), -1) {
			lines = append(lines, m[1])
		}
		for _, l := range lines {
			if c, ok := parseCommand(l); ok {
				c.file = name
				out = append(out, c)
			}
		}
	}
	if len(out) == 0 {
		t.Fatal("no go commands found in the docs")
	}
	return out
}

// parseCommand reads a shell line holding a go run or go test command,
// up to a comment, a redirection or the next command.
func parseCommand(line string) (command, bool) {
	fields := strings.Fields(line)
	var c command
	i := 0
	for ; i < len(fields) && regexp.MustCompile(`^[A-Z_]+=`).MatchString(fields[i]); i++ {
		c.env = append(c.env, fields[i])
	}
	if i+1 >= len(fields) || fields[i] != "go" || (fields[i+1] != "run" && fields[i+1] != "test") {
		return c, false
	}
	for _, f := range fields[i+1:] {
		if f == "#" || strings.HasPrefix(f, "#") || f == ">" || f == "|" || f == "&&" || f == ";" || strings.HasPrefix(f, ">") {
			break
		}
		c.args = append(c.args, strings.Trim(f, `'"`))
	}
	c.text = strings.Join(fields[i:], " ")
	return c, true
}

// goTestFlags are go test's own flags (and the build flags it takes).
var goTestFlags = map[string]bool{"race": true, "count": true, "timeout": true, "run": true, "bench": true,
	"benchtime": true, "benchmem": true, "fuzz": true, "fuzztime": true, "v": true, "json": true, "c": true,
	"short": true, "cpu": true, "skip": true, "cover": true, "failfast": true, "tags": true, "p": true}

// pkgDir is a package argument's folder ("./x/..." → "x"), or "" when
// the argument is not a package.
func pkgDir(arg string) string {
	if !strings.HasPrefix(arg, "./") {
		return ""
	}
	return strings.TrimSuffix(strings.TrimSuffix(strings.TrimPrefix(arg, "./"), "..."), "/")
}

// TestDocsCommandsExist: every `go run` and `go test` command of
// README.md and docs/*.md names packages that exist; condense-proxy's
// subcommands and flags are ones its --help lists, other programs' flags
// are defined in their source, go test's flags are go test's or defined
// by the package's tests.
func TestDocsCommandsExist(t *testing.T) {
	helps := map[string]string{}
	for _, c := range commands(t) {
		where := c.file + ": " + c.text
		var pkgs, flags []string
		args := c.args[1:]
		if c.args[0] == "run" {
			if len(args) == 0 || pkgDir(args[0]) == "" {
				t.Errorf("%s: go run of no package", where)
				continue
			}
			prog := pkgDir(args[0])
			if !isMain(filepath.Join(root, prog)) {
				t.Errorf("%s: %s is not a main package", where, args[0])
				continue
			}
			args = args[1:]
			switch prog {
			case "cmd/condense-proxy":
				sub := "serve"
				if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
					sub, args = args[0], args[1:]
				}
				if sub == "version" || sub == "health" {
					continue
				}
				if _, ok := helps[sub]; !ok {
					var out, errb bytes.Buffer
					if err := Main(context.Background(), []string{sub, "--help"}, &out, &errb, nil); err != nil {
						t.Errorf("%s: condense-proxy %s: %v", where, sub, err)
						continue
					}
					helps[sub] = out.String() + errb.String()
				}
				for _, a := range args {
					if name, ok := flagName(a); ok && !regexp.MustCompile(`(?m)--`+regexp.QuoteMeta(name)+`\b`).MatchString(helps[sub]) {
						t.Errorf("%s: condense-proxy %s --help has no --%s", where, sub, name)
					}
				}
				continue
			case "internal/tools/testsum":
				// Its arguments are go test's.
			default:
				for _, a := range args {
					if name, ok := flagName(a); ok && !definedIn(filepath.Join(root, prog), name, false) {
						t.Errorf("%s: %s defines no flag %q", where, prog, name)
					}
				}
				continue
			}
		}
		for _, a := range args {
			if d := pkgDir(a); d != "" {
				pkgs = append(pkgs, d)
			} else if name, ok := flagName(a); ok {
				flags = append(flags, name)
			}
		}
		for _, d := range pkgs {
			if fi, err := os.Stat(filepath.Join(root, d)); err != nil || !fi.IsDir() {
				t.Errorf("%s: no package ./%s", where, d)
			}
		}
		for _, f := range flags {
			if goTestFlags[f] {
				continue
			}
			found := false
			for _, d := range pkgs {
				found = found || definedIn(filepath.Join(root, d), f, true)
			}
			if !found {
				t.Errorf("%s: -%s is neither go test's flag nor defined by the tests of %v", where, f, pkgs)
			}
		}
	}
}

// flagName is the name of a flag argument (-x, --x, -x=v).
func flagName(arg string) (string, bool) {
	if !strings.HasPrefix(arg, "-") || arg == "-" {
		return "", false
	}
	name, _, _ := strings.Cut(strings.TrimLeft(arg, "-"), "=")
	return name, name != ""
}

// isMain reports whether dir holds a main package.
func isMain(dir string) bool {
	files, _ := filepath.Glob(filepath.Join(dir, "*.go"))
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err == nil && !strings.HasSuffix(f, "_test.go") && regexp.MustCompile(`(?m)^package main$`).Match(raw) {
			return true
		}
	}
	return false
}

// definedIn reports whether the Go files of dir (its tests, or the rest)
// name the flag as a string literal: flag.Bool("update", …).
func definedIn(dir, name string, tests bool) bool {
	files, _ := filepath.Glob(filepath.Join(dir, "*.go"))
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") != tests {
			continue
		}
		raw, err := os.ReadFile(f)
		if err == nil && bytes.Contains(raw, []byte(`"`+name+`"`)) {
			return true
		}
	}
	return false
}

// TestDocsEnvVarsExist: every CONDENSE_* variable README.md and
// docs/*.md name is a key's (the keys table), one the code reads (named in
// its Go source), or one docker-compose.yml or .env.example interpolates.
func TestDocsEnvVarsExist(t *testing.T) {
	known := map[string]bool{config.EnvPrefix + "_CONFIG": true}
	for _, k := range config.Table() {
		known[k.Env()] = true
	}
	var source bytes.Buffer
	filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") && p != root || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if strings.HasSuffix(p, ".go") && !strings.HasSuffix(p, "readme_test.go") {
			raw, _ := os.ReadFile(p)
			source.Write(raw)
		}
		return nil
	})
	for _, f := range []string{"docker-compose.yml", ".env.example"} {
		raw, _ := os.ReadFile(filepath.Join(root, f))
		source.Write(raw)
	}
	re := regexp.MustCompile(`CONDENSE_[A-Z0-9_]*[A-Z0-9]`)
	for name, md := range docFiles(t) {
		for _, v := range re.FindAllString(md, -1) {
			switch {
			case known[v], bytes.Contains(source.Bytes(), []byte(v)):
			default:
				t.Errorf("%s names %s: not a key's variable, and nothing reads it", name, v)
			}
		}
	}
}

// TestCIRunsREADMETestCommand: .ci/run ends with the test command
// README.md gives (the first line of its Tests section's code block).
func TestCIRunsREADMETestCommand(t *testing.T) {
	readme := docFiles(t)["README.md"]
	_, tests, ok := strings.Cut(readme, "\n## Tests\n")
	if !ok {
		t.Fatal("README.md has no Tests section")
	}
	block := fenceRE.FindString(tests)
	lines := strings.Split(block, "\n")
	if len(lines) < 2 {
		t.Fatal("README's Tests section has no code block")
	}
	want := strings.TrimSpace(lines[1])
	raw, err := os.ReadFile(filepath.Join(root, ".ci", "run"))
	if err != nil {
		t.Fatal(err)
	}
	ci := strings.Split(strings.TrimSpace(string(raw)), "\n")
	if got := strings.TrimSpace(ci[len(ci)-1]); got != want {
		t.Errorf(".ci/run ends with\n%s\nREADME's test command is\n%s", got, want)
	}
	if !strings.HasPrefix(want, "go run ./internal/tools/testsum ") {
		t.Errorf("README's test command %q does not say what it skipped (internal/tools/testsum)", want)
	}
}
