package main

import (
	"bytes"
	"context"
	"flag"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/condense-proxy/condense-proxy/config"
)

var update = flag.Bool("update", false, "rewrite README.md's Configuration table from the keys table")

const readmePath = "../../README.md"

// readmeRow is one row of README's Configuration table.
type readmeRow struct {
	key, flag, def, meaning string
}

var rowRE = regexp.MustCompile("^\\| `([a-z_.]+)` \\| (`--[a-z-]+`|—) \\| (.*?) \\| (.*) \\|$")

// configTable returns the rows of README's Configuration table and the
// line range [from, to) they occupy.
func configTable(t *testing.T, readme string) (rows []readmeRow, lines []string, from, to int) {
	t.Helper()
	lines = strings.Split(readme, "\n")
	in := false
	for i, l := range lines {
		switch {
		case strings.HasPrefix(l, "## "):
			in = l == "## Configuration"
		case in && strings.HasPrefix(l, "| `"):
			m := rowRE.FindStringSubmatch(l)
			if m == nil {
				t.Fatalf("README line %d is not a key row: %q", i+1, l)
			}
			if from == 0 {
				from = i
			}
			to = i + 1
			rows = append(rows, readmeRow{m[1], strings.Trim(m[2], "`"), m[3], m[4]})
		}
	}
	if from == 0 {
		t.Fatal("README has no Configuration table")
	}
	return rows, lines, from, to
}

// TestREADMEConfigTableMatchesHelp: README's Configuration table has one
// row per flag of `serve --help`, in the keys table's order, each with
// the key's flag and default; `go test -run TestREADMEConfigTable -update`
// rewrites the rows from the keys table (a new key's meaning is its
// usage; existing meanings are kept).
func TestREADMEConfigTableMatchesHelp(t *testing.T) {
	raw, err := os.ReadFile(readmePath)
	if err != nil {
		t.Fatal(err)
	}
	rows, lines, from, to := configTable(t, string(raw))
	meaning := map[string]string{}
	for _, r := range rows {
		meaning[r.key] = r.meaning
	}
	var want []string
	for _, k := range config.Table() {
		m := meaning[k.Name]
		if m == "" {
			m = k.Usage
		}
		want = append(want, "| `"+k.Name+"` | `--"+k.Flag+"` | "+k.DefaultText()+" | "+m+" |")
	}
	models := "| `models` | — | [] | model entries, below |"
	if m, ok := meaning["models"]; ok {
		models = "| `models` | — | [] | " + m + " |"
	}
	want = append(want, models)

	if *update {
		out := append(append(append([]string{}, lines[:from]...), want...), lines[to:]...)
		if err := os.WriteFile(readmePath, []byte(strings.Join(out, "\n")), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	got := lines[from:to]
	for i := 0; i < max(len(got), len(want)); i++ {
		g, w := "", ""
		if i < len(got) {
			g = got[i]
		}
		if i < len(want) {
			w = want[i]
		}
		// The meaning is README's own; key, flag and default must agree.
		if cut(g) != cut(w) {
			t.Errorf("README Configuration row %d:\n got %s\nwant %s\n(go test ./cmd/condense-proxy -run TestREADMEConfigTable -update)", i+1, g, w)
		}
	}

	// And the table is what serve --help prints: every flag but --config
	// and --help has its row, with the default the flag shows.
	var out, errb bytes.Buffer
	if err := Main(context.Background(), []string{"serve", "--help"}, &out, &errb, nil); err != nil {
		t.Fatal(err)
	}
	help := errb.String()
	documented := map[string]readmeRow{}
	for _, r := range rows {
		documented[r.flag] = r
	}
	flags := regexp.MustCompile(`(?m)^\s+(?:-\w, )?--([a-z-]+)`).FindAllStringSubmatch(help, -1)
	if len(flags) < len(config.Table()) {
		t.Fatalf("serve --help lists %d flags, the keys table has %d:\n%s", len(flags), len(config.Table()), help)
	}
	var order []string
	for _, f := range flags {
		if f[1] == "config" || f[1] == "help" {
			continue
		}
		order = append(order, f[1])
		if _, ok := documented["--"+f[1]]; !ok {
			t.Errorf("serve --help has --%s; README's Configuration table has no row for it", f[1])
		}
	}
	// In the same order.
	var readmeOrder []string
	for _, r := range rows {
		if r.flag != "—" {
			readmeOrder = append(readmeOrder, strings.TrimPrefix(r.flag, "--"))
		}
	}
	if strings.Join(order, " ") != strings.Join(readmeOrder, " ") {
		t.Errorf("serve --help lists the flags in another order than README:\n%s\n%s", strings.Join(order, " "), strings.Join(readmeOrder, " "))
	}
	for _, k := range config.Table() {
		if !strings.Contains(help, "--"+k.Flag+" ") {
			t.Errorf("serve --help lacks --%s (%s)", k.Flag, k.Name)
		}
	}
}

// cut drops a row's meaning.
func cut(row string) string {
	m := rowRE.FindStringSubmatch(row)
	if m == nil {
		return row
	}
	return m[1] + " " + m[2] + " " + m[3]
}
