package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"
)

// TestServeRefusesWithoutUpstream: with no upstream given the proxy does
// not start (it used to forward to https://api.openai.com, whatever key
// the caller sent — a LiteLLM virtual key included); the error names the
// three ways to give one.
func TestServeRefusesWithoutUpstream(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ready := make(chan string, 1)
	done := make(chan error, 1)
	go func() { done <- serve(ctx, []string{"--listen", "127.0.0.1:0"}, io.Discard, io.Discard, nil, ready) }()
	select {
	case addr := <-ready:
		cancel()
		<-done
		t.Fatalf("serve started on %s without an upstream", addr)
	case err := <-done:
		if err == nil {
			t.Fatal("serve returned nil without an upstream")
		}
		for _, want := range []string{"upstream: not set", "--upstream", "CONDENSE_UPSTREAM", "upstream: in the config file"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("error does not say %q:\n%v", want, err)
			}
		}
	}
}

// TestOfflineNeedsNoUpstream: the offline condense command sends
// nothing anywhere with the extractive summarizer, so it needs no
// upstream; with the LLM summarizer it asks for one instead of calling
// OpenAI by default.
func TestOfflineNeedsNoUpstream(t *testing.T) {
	file := filepath.Join(t.TempDir(), "req.json")
	body := `{"model":"gpt-4o","messages":[{"role":"user","content":"hello"}]}`
	if err := os.WriteFile(file, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	if err := Main(context.Background(), []string{"condense", file}, &out, &errb, nil); err != nil {
		t.Fatalf("extractive, no upstream: %v\n%s", err, errb.String())
	}
	err := Main(context.Background(), []string{"condense", "--summarizer", "llm", file}, &out, &errb, nil)
	if err == nil || !strings.Contains(err.Error(), "--upstream") {
		t.Fatalf("llm without an upstream: %v", err)
	}
}

// TestUnknownFlagSuggests: a mistyped flag gets the nearest one, as a
// mistyped YAML key or environment variable does.
func TestUnknownFlagSuggests(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--treshold", "0.6", "--upstream", "http://127.0.0.1:1"}, "unknown flag: --treshold (did you mean --threshold?)"},
		{[]string{"serve", "--upstrem", "http://127.0.0.1:1"}, "(did you mean --upstream?)"},
		{[]string{"condense", "--context-windw", "1000", "x.json"}, "(did you mean --context-window?)"},
	} {
		var out, errb bytes.Buffer
		err := Main(context.Background(), tc.args, &out, &errb, nil)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want %q", tc.args, err, tc.want)
		}
	}
}

// TestVersionFromBuildInfo: the version comes from -ldflags when set,
// else from what the toolchain recorded: the module's version, or the
// commit and whether the tree was modified; never a bare "dev".
func TestVersionFromBuildInfo(t *testing.T) {
	rev := "0123456789abcdef0123456789abcdef01234567"
	for _, tc := range []struct {
		name     string
		bi       *debug.BuildInfo
		override string
		want     string
	}{
		{"ldflags", &debug.BuildInfo{Main: debug.Module{Version: "v1.0.0"}}, "v9.9.9", "v9.9.9"},
		{"release", &debug.BuildInfo{Main: debug.Module{Version: "v1.2.0"}}, "", "v1.2.0"},
		{"pseudo-version of a modified tree", &debug.BuildInfo{Main: debug.Module{Version: "v0.0.0-20260101000000-0123456789ab+dirty"}}, "", "v0.0.0-20260101000000-0123456789ab+dirty"},
		{"devel with its commit", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: rev}, {Key: "vcs.modified", Value: "false"}}}, "", "devel 0123456789ab"},
		{"devel, modified", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: rev}, {Key: "vcs.modified", Value: "true"}}}, "", "devel 0123456789ab-dirty"},
		{"devel without VCS", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, "", "devel"},
		{"no build info", nil, "", "unknown"},
	} {
		if got := buildVersion(tc.bi, tc.override); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
	var out, errb bytes.Buffer
	if err := Main(context.Background(), []string{"version"}, &out, &errb, nil); err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(out.String()); got == "condense-proxy dev" || got != "condense-proxy "+currentVersion() {
		t.Errorf("version printed %q", got)
	}
}

// TestVersionLdflagsOverride builds the binary with -ldflags -X
// main.version, as the Dockerfile does, and runs its version command.
func TestVersionLdflagsOverride(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary (-short)")
	}
	bin := filepath.Join(t.TempDir(), "condense-proxy")
	build := exec.Command("go", "build", "-ldflags", "-X main.version=v9.8.7-test", "-o", bin, ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	out, err := exec.Command(bin, "version").Output()
	if err != nil || strings.TrimSpace(string(out)) != "condense-proxy v9.8.7-test" {
		t.Fatalf("version: %q %v", out, err)
	}
}
