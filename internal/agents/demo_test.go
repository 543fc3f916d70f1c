package agents_test

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/condense-proxy/condense-proxy/internal/agents"
)

// demoReadme is the file the scripted model of the demo reads.
const demoReadme = "# Widget\nThe widget project: a demo directory.\n"

// TestAgentsOnTheDemo runs `condense-proxy demo` (the built binary), as
// README shows it, and points the real Claude Code and Codex at the
// addresses the demo prints for them: each completes a short session —
// the scripted model has it list the directory, read the README it
// listed, and report — and the demo's page, opened with the key it
// prints, shows the agent's conversation.
func TestAgentsOnTheDemo(t *testing.T) {
	claude := agents.Require(t, agents.Claude)
	codex := agents.Require(t, agents.Codex)
	d := startDemo(t)

	runs := []struct {
		name, format string
		run          func(home, work string) agents.Result
	}{
		{"claude-code", "messages", func(home, work string) agents.Result {
			return agents.Run(agentContext(t), agents.ClaudeCommand(agents.ClaudeOptions{Bin: claude, BaseURL: d.claudeURL,
				Home: home, Workdir: work, Model: "claude-sonnet-4-5", APIKey: "sk-demo", Prompt: "Look around and report."}))
		}},
		// claude-opus-4-8 is this Claude Code's own default model: it
		// sends system messages among the others.
		{"claude-code-default-model", "messages", func(home, work string) agents.Result {
			return agents.Run(agentContext(t), agents.ClaudeCommand(agents.ClaudeOptions{Bin: claude, BaseURL: d.claudeURL,
				Home: home, Workdir: work, Model: "claude-opus-4-8", APIKey: "sk-demo", Prompt: "Look around and report."}))
		}},
		{"codex", "responses", func(home, work string) agents.Result {
			return agents.Run(agentContext(t), agents.CodexCommand(agents.CodexOptions{Bin: codex, BaseURL: d.codexURL,
				Home: home, Workdir: work, APIKey: "sk-demo", Prompt: "Look around and report."}))
		}},
	}
	for _, r := range runs {
		t.Run(r.name, func(t *testing.T) {
			dir := t.TempDir()
			home, work := filepath.Join(dir, "home"), filepath.Join(dir, "work")
			for _, p := range []string{home, work} {
				if err := os.MkdirAll(p, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			if err := os.WriteFile(filepath.Join(work, "README.md"), []byte(demoReadme), 0o644); err != nil {
				t.Fatal(err)
			}
			before := d.conversations(t, r.format)
			res := r.run(home, work)
			if res.Err != nil {
				t.Fatalf("%s: %v after %v\nstdout:\n%s\nstderr:\n%s", r.name, res.Err, res.Duration, res.Stdout, res.Stderr)
			}
			// The final answer reports the listing and the file's first
			// lines: the session went through both tool calls.
			if !strings.Contains(res.Stdout, "README.md begins:") || !strings.Contains(res.Stdout, "The widget project: a demo directory.") {
				t.Errorf("%s's final answer:\n%s\nstderr:\n%s", r.name, res.Stdout, res.Stderr)
			}
			if after := d.conversations(t, r.format); after <= before {
				t.Errorf("the page shows %d %s conversations with the demo's key, %d before the run", after, r.format, before)
			}
		})
	}
	d.stop(t)
}

// demoRun is a running `condense-proxy demo`.
type demoRun struct {
	cmd                 *exec.Cmd
	key                 string
	base                string // the proxy
	claudeURL, codexURL string // as the demo prints them for the agents
	stderr              strings.Builder
	stopped             bool
}

var (
	demoKeyLine   = regexp.MustCompile(`Its key:\s+(\S+)`)
	demoPageLine  = regexp.MustCompile(`Live page:\s+(\S+)/ui`)
	demoClaudeURL = regexp.MustCompile(`ANTHROPIC_BASE_URL=(\S+) `)
	demoCodexURL  = regexp.MustCompile(`base_url="([^"]+)"`)
)

// startDemo builds condense-proxy, starts `condense-proxy demo` on a free
// port and reads what it prints until the agents' commands.
func startDemo(t *testing.T) *demoRun {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "condense-proxy")
	build := exec.Command("go", "build", "-o", bin, "github.com/condense-proxy/condense-proxy/cmd/condense-proxy")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building condense-proxy: %v\n%s", err, out)
	}
	d := &demoRun{cmd: exec.Command(bin, "demo", "--listen", "127.0.0.1:0", "--pause", "0s")}
	d.cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}
	d.cmd.Stderr = &d.stderr
	out, err := d.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := d.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if !d.stopped {
			d.cmd.Process.Kill()
			d.cmd.Wait()
		}
	})
	lines := make(chan string)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
		io.Copy(io.Discard, out)
	}()
	var printed []string
	timeout := time.After(2 * time.Minute)
	for d.codexURL == "" || d.claudeURL == "" || d.key == "" || d.base == "" {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("the demo ended:\n%s\n%s", strings.Join(printed, "\n"), d.stderr.String())
			}
			printed = append(printed, l)
			for re, dst := range map[*regexp.Regexp]*string{demoKeyLine: &d.key, demoPageLine: &d.base, demoClaudeURL: &d.claudeURL, demoCodexURL: &d.codexURL} {
				if m := re.FindStringSubmatch(l); m != nil {
					*dst = m[1]
				}
			}
		case <-timeout:
			t.Fatalf("the demo printed no agent commands:\n%s", strings.Join(printed, "\n"))
		}
	}
	go func() {
		for range lines {
		}
	}()
	t.Logf("the demo at %s (Claude Code %s, Codex %s)", d.base, d.claudeURL, d.codexURL)
	return d
}

// conversations counts the page's conversations of a format, as the
// demo's key sees them, and checks that none has a degraded request (an
// agent's own prompt over the demo's window would make every request
// one).
func (d *demoRun) conversations(t *testing.T, format string) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, d.base+"/ui/api/conversations", nil)
	req.Header.Set("Authorization", "Bearer "+d.key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var list struct {
		Conversations []struct {
			Format   string `json:"format"`
			Content  bool   `json:"content"`
			Degraded int    `json:"degraded"`
		} `json:"conversations"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&list); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("the page's conversations: %d %v", resp.StatusCode, err)
	}
	n := 0
	for _, c := range list.Conversations {
		if c.Format == format && c.Content {
			n++
		}
		if c.Degraded > 0 {
			t.Errorf("a %s conversation has %d degraded requests", c.Format, c.Degraded)
		}
	}
	return n
}

// stop interrupts the demo and checks that it ends cleanly.
func (d *demoRun) stop(t *testing.T) {
	t.Helper()
	d.cmd.Process.Signal(os.Interrupt)
	d.stopped = true
	done := make(chan error, 1)
	go func() { done <- d.cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("the demo ended with %v:\n%s", err, d.stderr.String())
		}
	case <-time.After(30 * time.Second):
		t.Errorf("the demo did not end on an interrupt")
		d.cmd.Process.Kill()
		<-done
	}
}
