// Command gen writes docs/configuration.md from the keys table
// (config.Table): one row per key with its flag, environment variable,
// default and range, between the page's hand-written parts (template.md).
//
//	go run ./config/gen            # from the module's root
//	go generate ./config/          # the same
//
// TestConfigurationPageIsGenerated fails when the page differs from what
// gen writes.
package main

import (
	"bytes"
	_ "embed"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/condense-proxy/condense-proxy/config"
)

//go:embed template.md
var template string

// Page is where the page lives, from the module's root.
const Page = "docs/configuration.md"

// marker is the line of template.md the table replaces.
const marker = "{{keys}}"

func main() {
	out := filepath.Join(root(), Page)
	if len(os.Args) > 1 {
		out = os.Args[1]
	}
	if err := os.WriteFile(out, render(), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
}

// render is the page: template.md with the keys table in place of its
// marker line.
func render() []byte {
	var t bytes.Buffer
	t.WriteString("| key | flag | environment | default | range | meaning |\n|---|---|---|---|---|---|\n")
	for _, k := range config.Table() {
		rng := "—"
		switch k.Kind {
		case config.KindInt, config.KindBytes, config.KindFloat, config.KindDuration:
			rng = k.RangeText()
		}
		fmt.Fprintf(&t, "| `%s` | `--%s` | `%s` | %s | %s | %s |\n",
			k.Name, k.Flag, k.Env(), cell(k.DefaultText()), rng, cell(k.Usage))
	}
	return []byte(strings.Replace(template, marker+"\n", t.String(), 1))
}

// cell escapes what would break a table's row.
func cell(s string) string { return strings.ReplaceAll(s, "|", `\|`) }

// root is the module's root, from the package's folder (tests) or the
// working directory.
func root() string {
	for _, d := range []string{".", "..", filepath.Join("..", "..")} {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d
		}
	}
	return "."
}
