package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/condense-proxy/condense-proxy/config"
)

// TestConfigurationPageIsGenerated: docs/configuration.md is what gen
// writes from the keys table; a key added, renamed or given another
// default fails here until `go run ./config/gen` is run.
func TestConfigurationPageIsGenerated(t *testing.T) {
	path := filepath.Join(root(), Page)
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(render()) {
		t.Errorf("%s is out of date with the keys table (config/keys.go): run `go run ./config/gen`", Page)
	}
}

// TestPageHasEveryKey: one row per key, with its flag and environment
// variable — what the page is for, whatever the template says.
func TestPageHasEveryKey(t *testing.T) {
	page := string(render())
	if strings.Contains(page, marker) {
		t.Fatal("the marker is still in the page")
	}
	for _, k := range config.Table() {
		row := "| `" + k.Name + "` | `--" + k.Flag + "` | `" + k.Env() + "` | "
		if strings.Count(page, row) != 1 {
			t.Errorf("no single row for %s (%q)", k.Name, row)
		}
	}
}
