// Package agents runs real coding agents — Claude Code (Anthropic
// Messages), Codex (OpenAI Responses), qwen-code (chat completions) and
// Gemini CLI (Gemini generateContent) — headless and offline against a
// local upstream, for the end-to-end tests of condense-proxy.
//
// The pinned versions (ClaudeCodeVersion, CodexVersion, QwenCodeVersion,
// GeminiCLIVersion) are installed from npm by .ci/run into Dir(); Find
// looks at the CONDENSE_CLAUDE_BIN / CONDENSE_CODEX_BIN /
// CONDENSE_QWEN_BIN / CONDENSE_GEMINI_BIN overrides' targets, then there,
// then on PATH.
// Require turns a missing agent into a skipped test, or a failed one in
// CI (testenv.InCI).
//
// A test starts an in-process proxy (internal/harness) in front of the
// strict Messages, Responses or Gemini fake (internal/fakeupstream), or
// the tests' strict chat-completions fake, driven by a Script, puts a
// Front recorder around the proxy, writes large files into a scratch work
// directory (WriteFiles) and runs the agent with ClaudeCommand,
// CodexCommand, QwenCommand or GeminiCommand: the script makes the agent read one file
// per step, and the recorders tell what the agent sent, what the proxy
// answered and what the upstream received.
package agents

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/condense-proxy/condense-proxy/internal/testenv"
)

// Versions the tests pin; .ci/run installs exactly these (a test checks
// that .ci/run names them).
const (
	ClaudeCodeVersion = "2.1.197" // npm @anthropic-ai/claude-code
	CodexVersion      = "0.169.0" // npm @openai/codex
	QwenCodeVersion   = "0.24.4"  // npm @qwen-code/qwen-code
	GeminiCLIVersion  = "0.61.0"  // npm @google/gemini-cli
)

// Agent names, as their binaries are called.
const (
	Claude = "claude"
	Codex  = "codex"
	Qwen   = "qwen"
	Gemini = "gemini"
)

// Dir is where .ci/run installs the pinned agents (an npm prefix):
// $CONDENSE_AGENTS_DIR, else <user cache dir>/condense-proxy/agents
// (~/.cache/condense-proxy/agents on Linux).
func Dir() string {
	if d := os.Getenv("CONDENSE_AGENTS_DIR"); d != "" {
		return d
	}
	c, err := os.UserCacheDir()
	if err != nil {
		c = filepath.Join(os.TempDir(), "cache")
	}
	return filepath.Join(c, "condense-proxy", "agents")
}

// envOverride names the variable that points at an agent binary.
func envOverride(name string) string {
	return "CONDENSE_" + strings.ToUpper(name) + "_BIN"
}

// Find returns the path of an agent's binary (Claude, Codex, Qwen or
// Gemini): the file $CONDENSE_CLAUDE_BIN / $CONDENSE_CODEX_BIN /
// $CONDENSE_QWEN_BIN / $CONDENSE_GEMINI_BIN names, else
// Dir()/node_modules/.bin/<name>, else <name> on PATH.
func Find(name string) (string, error) {
	if p := os.Getenv(envOverride(name)); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("%s=%s: %w", envOverride(name), p, err)
		}
		return p, nil
	}
	p := filepath.Join(Dir(), "node_modules", ".bin", name)
	if _, err := os.Stat(p); err == nil {
		return p, nil
	}
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	return "", fmt.Errorf("%s not found in %s, %s or PATH (.ci/run installs it: npm install --prefix %s %s)",
		name, filepath.Join(Dir(), "node_modules", ".bin"), envOverride(name), Dir(), npmPackage(name))
}

func npmPackage(name string) string {
	switch name {
	case Codex:
		return "@openai/codex@" + CodexVersion
	case Qwen:
		return "@qwen-code/qwen-code@" + QwenCodeVersion
	case Gemini:
		return "@google/gemini-cli@" + GeminiCLIVersion
	}
	return "@anthropic-ai/claude-code@" + ClaudeCodeVersion
}

// InCI reports whether the tests run in CI (testenv.InCI: CI set to anything but "", "0" or "false"), where a missing
// agent fails its test instead of skipping it.
func InCI() bool {
	return testenv.InCI()
}

// Require returns the agent's binary, or ends the test: skipped with a
// message saying how to install it, or failed in CI.
func Require(t testing.TB, name string) string {
	t.Helper()
	p, err := Find(name)
	if err == nil {
		return p
	}
	if InCI() {
		t.Fatalf("in CI and the agent is missing: %v", err)
	}
	t.Skipf("skipping: %v", err)
	return ""
}

// Version runs `<bin> --version` and returns its first line.
func Version(bin string) (string, error) {
	out, err := exec.Command(bin, "--version").Output()
	if err != nil {
		return "", err
	}
	line, _, _ := strings.Cut(strings.TrimSpace(string(out)), "\n")
	return line, nil
}

// baseEnv is the environment every agent runs with: PATH (the codex and
// qwen launchers are node scripts), a scratch HOME, and nothing else — no
// HTTP(S)_PROXY, which would send loopback requests elsewhere, and no
// credentials of the machine's user.
func baseEnv(home string) []string {
	return []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "LANG=C.UTF-8", "TERM=dumb"}
}

// ClaudeOptions configures a Claude Code run.
type ClaudeOptions struct {
	Bin     string // from Require(t, Claude)
	BaseURL string // the proxy (ANTHROPIC_BASE_URL), without /v1
	Home    string // scratch HOME (settings, sessions)
	Workdir string // the agent's working directory
	Prompt  string
	// Model; default "claude-sonnet-4-5" (thinking enabled with a budget).
	Model string
	// OwnModel runs without --model: Claude Code picks its own default
	// (claude-opus-4-8 in 2.1.197, which sends a system message among the
	// messages). Model is ignored.
	OwnModel bool
	// APIKey, sent as x-api-key; default "sk-ant-test".
	APIKey string
	// Extra arguments and environment entries.
	Args, Env []string
}

// ClaudeCommand returns the command that runs Claude Code headless:
// `claude -p PROMPT --model M --dangerously-skip-permissions` with
// IS_SANDBOX=1 (root may skip permissions only then),
// CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 and DISABLE_TELEMETRY=1 (no
// other hosts contacted), ANTHROPIC_BASE_URL and ANTHROPIC_API_KEY, stdin
// from /dev/null. The caller bounds it with a context (exec.CommandContext
// is used when ctx is given to Start through Cmd.Cancel — see Run).
func ClaudeCommand(o ClaudeOptions) *exec.Cmd {
	if o.Model == "" {
		o.Model = "claude-sonnet-4-5"
	}
	if o.APIKey == "" {
		o.APIKey = "sk-ant-test"
	}
	args := []string{"-p", o.Prompt}
	if !o.OwnModel {
		args = append(args, "--model", o.Model)
	}
	args = append(append(args, "--dangerously-skip-permissions"), o.Args...)
	cmd := exec.Command(o.Bin, args...)
	cmd.Dir = o.Workdir
	cmd.Env = append(baseEnv(o.Home),
		"IS_SANDBOX=1",
		"ANTHROPIC_BASE_URL="+o.BaseURL,
		"ANTHROPIC_API_KEY="+o.APIKey,
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
		"DISABLE_TELEMETRY=1",
		"DISABLE_AUTOUPDATER=1",
	)
	cmd.Env = append(cmd.Env, o.Env...)
	return cmd
}

// CodexOptions configures a Codex run.
type CodexOptions struct {
	Bin     string // from Require(t, Codex)
	BaseURL string // the proxy's base URL including /v1
	Home    string // scratch HOME; CODEX_HOME is Home/.codex
	Workdir string
	Prompt  string
	// Model; default "gpt-5.5".
	Model string
	// OwnModel runs without -m: Codex picks its own default (gpt-6.1-sol
	// in 0.169, which declares its tools in an additional_tools input
	// item, a JavaScript exec tool holding the others). Model is ignored.
	OwnModel bool
	// APIKey, sent as Authorization: Bearer; default "sk-test".
	APIKey string
	// Extra arguments (before the prompt) and environment entries.
	Args, Env []string
}

// CodexCommand returns the command that runs `codex exec` against a custom
// provider "fake" (base_url at BaseURL, wire_api "responses", key from
// FAKE_KEY, no retries), with analytics and plugins off, the git check
// skipped, no sandbox (the container has none to offer) and stdin from
// /dev/null (it waits on an open stdin). It creates CODEX_HOME, which
// codex requires to exist.
func CodexCommand(o CodexOptions) *exec.Cmd {
	if o.Model == "" {
		o.Model = "gpt-5.5"
	}
	if o.APIKey == "" {
		o.APIKey = "sk-test"
	}
	provider := fmt.Sprintf(`model_providers.fake={name="fake", base_url=%q, env_key="FAKE_KEY", wire_api="responses", request_max_retries=0, stream_max_retries=0}`, o.BaseURL)
	args := []string{"exec",
		"-c", "model_provider=fake",
		"-c", provider,
		"-c", "analytics.enabled=false",
		"--disable", "plugins",
		"--skip-git-repo-check",
		"--dangerously-bypass-approvals-and-sandbox",
	}
	if !o.OwnModel {
		args = append(args, "-m", o.Model)
	}
	args = append(args, o.Args...)
	args = append(args, o.Prompt)
	cmd := exec.Command(o.Bin, args...)
	cmd.Dir = o.Workdir
	codexHome := filepath.Join(o.Home, ".codex")
	os.MkdirAll(codexHome, 0o700)
	cmd.Env = append(baseEnv(o.Home), "CODEX_HOME="+codexHome, "FAKE_KEY="+o.APIKey)
	cmd.Env = append(cmd.Env, o.Env...)
	return cmd
}

// QwenOptions configures a qwen-code run.
type QwenOptions struct {
	Bin     string // from Require(t, Qwen)
	BaseURL string // the proxy's base URL including /v1 (OPENAI_BASE_URL)
	Home    string // scratch HOME; settings in Home/.qwen/settings.json
	Workdir string
	Prompt  string
	// Model; default "qwen3-coder-plus" (a 1M-token window to qwen-code,
	// so it leaves condensing to the proxy).
	Model string
	// APIKey, sent as Authorization: Bearer; default "sk-test".
	APIKey string
	// Extra arguments (before the prompt) and environment entries.
	Args, Env []string
}

// QwenSettings is the user settings file QwenCommand writes: no usage
// statistics (qwen-code otherwise reports to an Aliyun RUM host), no
// telemetry, no update checks, and no managed auto-memory (a background
// memory-extraction agent that sends its own chat requests after the
// session).
const QwenSettings = `{
  "privacy": {"usageStatisticsEnabled": false},
  "telemetry": {"enabled": false},
  "general": {"enableAutoUpdate": false},
  "memory": {"enableManagedAutoMemory": false, "enableManagedAutoDream": false}
}
`

// QwenCommand returns the command that runs qwen-code headless (a
// positional prompt is a one-shot run) against an OpenAI-compatible
// provider: `qwen --auth-type openai --model M --approval-mode yolo
// PROMPT` with OPENAI_BASE_URL, OPENAI_API_KEY and OPENAI_MODEL, usage
// statistics off (QWEN_USAGE_STATISTICS_ENABLED=false and QwenSettings,
// which it writes to Home/.qwen/settings.json) and stdin from /dev/null.
func QwenCommand(o QwenOptions) *exec.Cmd {
	if o.Model == "" {
		o.Model = "qwen3-coder-plus"
	}
	if o.APIKey == "" {
		o.APIKey = "sk-test"
	}
	args := []string{"--auth-type", "openai", "--model", o.Model, "--approval-mode", "yolo"}
	args = append(args, o.Args...)
	args = append(args, o.Prompt)
	cmd := exec.Command(o.Bin, args...)
	cmd.Dir = o.Workdir
	dir := filepath.Join(o.Home, ".qwen")
	os.MkdirAll(dir, 0o700)
	os.WriteFile(filepath.Join(dir, "settings.json"), []byte(QwenSettings), 0o600)
	cmd.Env = append(baseEnv(o.Home),
		"OPENAI_BASE_URL="+o.BaseURL,
		"OPENAI_API_KEY="+o.APIKey,
		"OPENAI_MODEL="+o.Model,
		"QWEN_USAGE_STATISTICS_ENABLED=false",
		"QWEN_CODE_SUPPRESS_YOLO_WARNING=1",
	)
	cmd.Env = append(cmd.Env, o.Env...)
	return cmd
}

// GeminiOptions configures a Gemini CLI run.
type GeminiOptions struct {
	Bin string // from Require(t, Gemini)
	// BaseURL is the proxy's root (GOOGLE_GEMINI_BASE_URL), without
	// /v1beta: the CLI appends /v1beta/models/{model}:{method}.
	BaseURL string
	Home    string // scratch HOME; settings in Home/.gemini/settings.json
	Workdir string
	Prompt  string
	// Model; default "gemini-2.5-pro" (named with --model, so the CLI's
	// model router, which would ask a classifier model first, stays off).
	Model string
	// APIKey, sent as x-goog-api-key; default "gk-test".
	APIKey string
	// Extra arguments (before the prompt) and environment entries.
	Args, Env []string
}

// GeminiSettings is the user settings file GeminiCommand writes: API-key
// auth (no Google login), no usage statistics (which the CLI otherwise
// sends to Google's Clearcut logging host), no telemetry, no update
// checks or notifications (npm registry), no IDE integration, no
// session-retention sweep.
const GeminiSettings = `{
  "security": {"auth": {"selectedType": "gemini-api-key"}, "folderTrust": {"enabled": false}},
  "privacy": {"usageStatisticsEnabled": false},
  "telemetry": {"enabled": false},
  "general": {"enableAutoUpdate": false, "enableAutoUpdateNotification": false},
  "ide": {"enabled": false}
}
`

// GeminiCommand returns the command that runs Gemini CLI headless against
// a Gemini API at BaseURL: `gemini --model M --approval-mode yolo
// --prompt PROMPT` with GOOGLE_GEMINI_BASE_URL and GEMINI_API_KEY, the
// workspace trusted (GEMINI_CLI_TRUST_WORKSPACE=true), no relaunch in a
// child node process with a bigger heap (GEMINI_CLI_NO_RELAUNCH=true, so
// that Run's process group holds everything), telemetry off
// (GEMINI_TELEMETRY_ENABLED=false and GeminiSettings, which it writes to
// Home/.gemini/settings.json), TMPDIR in Home (where it writes error
// reports) and stdin from /dev/null.
func GeminiCommand(o GeminiOptions) *exec.Cmd {
	if o.Model == "" {
		o.Model = "gemini-2.5-pro"
	}
	if o.APIKey == "" {
		o.APIKey = "gk-test"
	}
	args := []string{"--model", o.Model, "--approval-mode", "yolo"}
	args = append(args, o.Args...)
	args = append(args, "--prompt", o.Prompt)
	cmd := exec.Command(o.Bin, args...)
	cmd.Dir = o.Workdir
	dir := filepath.Join(o.Home, ".gemini")
	os.MkdirAll(dir, 0o700)
	os.WriteFile(filepath.Join(dir, "settings.json"), []byte(GeminiSettings), 0o600)
	tmp := filepath.Join(o.Home, "tmp")
	os.MkdirAll(tmp, 0o700)
	cmd.Env = append(baseEnv(o.Home),
		"TMPDIR="+tmp, // its error reports (gemini-client-error-*.json)
		"GOOGLE_GEMINI_BASE_URL="+o.BaseURL,
		"GEMINI_API_KEY="+o.APIKey,
		"GEMINI_CLI_TRUST_WORKSPACE=true",
		"GEMINI_CLI_NO_RELAUNCH=true",
		"GEMINI_TELEMETRY_ENABLED=false",
	)
	cmd.Env = append(cmd.Env, o.Env...)
	return cmd
}

// ErrTimeout is returned by Run when the agent outlived its time.
var ErrTimeout = errors.New("agent timed out")
