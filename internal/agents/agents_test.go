package agents_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/condense-proxy/condense-proxy/internal/agents"
)

// TestCIInstallsPinnedVersions keeps .ci/run and the pinned versions in
// step.
func TestCIInstallsPinnedVersions(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", ".ci", "run"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"CLAUDE_CODE_VERSION=" + agents.ClaudeCodeVersion, "CODEX_VERSION=" + agents.CodexVersion,
		"QWEN_CODE_VERSION=" + agents.QwenCodeVersion, "GEMINI_CLI_VERSION=" + agents.GeminiCLIVersion,
		"@anthropic-ai/claude-code@$CLAUDE_CODE_VERSION", "@openai/codex@$CODEX_VERSION", "@qwen-code/qwen-code@$QWEN_CODE_VERSION",
		"@google/gemini-cli@$GEMINI_CLI_VERSION",
		`agent_ok qwen "$QWEN_CODE_VERSION"`, `agent_ok gemini "$GEMINI_CLI_VERSION"`, "CONDENSE_AGENTS_DIR"} {
		if !strings.Contains(string(b), want) {
			t.Errorf(".ci/run does not contain %q", want)
		}
	}
}

func TestFind(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "node_modules", ".bin")
	os.MkdirAll(bin, 0o755)
	os.WriteFile(filepath.Join(bin, "codex"), []byte("#!/bin/sh\n"), 0o755)
	t.Setenv("CONDENSE_AGENTS_DIR", dir)
	t.Setenv("PATH", t.TempDir())
	if p, err := agents.Find(agents.Codex); err != nil || p != filepath.Join(bin, "codex") {
		t.Errorf("Find(codex) = %q, %v", p, err)
	}
	if _, err := agents.Find(agents.Claude); err == nil || !strings.Contains(err.Error(), "@anthropic-ai/claude-code@"+agents.ClaudeCodeVersion) {
		t.Errorf("Find(claude) error %v", err)
	}
	if _, err := agents.Find(agents.Qwen); err == nil || !strings.Contains(err.Error(), "@qwen-code/qwen-code@"+agents.QwenCodeVersion) {
		t.Errorf("Find(qwen) error %v", err)
	}
	if _, err := agents.Find(agents.Gemini); err == nil || !strings.Contains(err.Error(), "@google/gemini-cli@"+agents.GeminiCLIVersion) ||
		!strings.Contains(err.Error(), "CONDENSE_GEMINI_BIN") {
		t.Errorf("Find(gemini) error %v", err)
	}
	own := filepath.Join(t.TempDir(), "my-claude")
	os.WriteFile(own, []byte("#!/bin/sh\n"), 0o755)
	t.Setenv("CONDENSE_CLAUDE_BIN", own)
	if p, err := agents.Find(agents.Claude); err != nil || p != own {
		t.Errorf("Find with override = %q, %v", p, err)
	}
}

func TestWriteFiles(t *testing.T) {
	files, err := agents.WriteFiles(t.TempDir(), 3, 30_000)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, f := range files {
		b, err := os.ReadFile(f.Path)
		if err != nil {
			t.Fatal(err)
		}
		if len(b) < 30_000 || len(b) > 32_000 || f.Size != len(b) || !strings.Contains(string(b), f.Fact) || seen[f.Fact] {
			t.Errorf("%s: %d bytes, fact %q", f.Path, len(b), f.Fact)
		}
		seen[f.Fact] = true
	}
}

func TestFront(t *testing.T) {
	f := &agents.Front{}
	srv := httptest.NewServer(f.Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.ReadAll(r.Body)
		w.Header().Set("X-Condense-Applied", "selective")
		w.Header().Set("Content-Type", "text/event-stream")
		w.Write([]byte("data: 1\n\n"))
		w.(http.Flusher).Flush()
	})))
	defer srv.Close()
	resp, err := http.Post(srv.URL+"/v1/messages?beta=true", "application/json", strings.NewReader(`{"a":1}`))
	if err != nil {
		t.Fatal(err)
	}
	io.ReadAll(resp.Body)
	resp.Body.Close()
	x := f.Exchanges()
	if len(x) != 1 || x[0].Path != "/v1/messages" || x[0].Query != "beta=true" || string(x[0].Body) != `{"a":1}` ||
		x[0].Status != 200 || x[0].Response.Get("X-Condense-Applied") != "selective" {
		t.Errorf("exchanges %+v", x)
	}
}
