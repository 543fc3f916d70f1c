package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/condense-proxy/condense-proxy/config"
)

// TestUsageTexts: each usage text names what a user needs from it — the
// subcommands and the four APIs the proxy condenses.
func TestUsageTexts(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want []string
	}{
		{"help", []string{"help"}, []string{"serve", "condense [flags] FILE|-", "health [URL]", "version", "/v1/chat/completions", "/v1/messages", "Anthropic Messages", "/v1/responses", "OpenAI Responses", "Gemini", ":generateContent"}},
		{"serve --help", []string{"serve", "--help"}, []string{"/v1/chat/completions", "/v1/messages", "/v1/responses", ":generateContent", "health", "condense", "CONDENSE_<KEY>", "--min-savings-tokens"}},
		{"condense --help", []string{"condense", "--help"}, []string{"chat completions", "Anthropic Messages", "OpenAI Responses", "--format"}},
		{"health --help", []string{"health", "--help"}, []string{"usage: condense-proxy health", "/healthz"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			if err := Main(context.Background(), tc.args, &out, &errb, nil); err != nil {
				t.Fatal(err)
			}
			text := out.String() + errb.String()
			for _, w := range tc.want {
				if !strings.Contains(text, w) {
					t.Errorf("lacks %q:\n%s", w, text)
				}
			}
		})
	}
	// --min-savings-tokens says what README says 0 means: the stride.
	var out, errb bytes.Buffer
	Main(context.Background(), []string{"serve", "--help"}, &out, &errb, nil)
	line := regexp.MustCompile(`.*--min-savings-tokens.*`).FindString(errb.String())
	if !strings.Contains(line, "0: the stride") {
		t.Errorf("--min-savings-tokens help %q does not say 0 is the stride", line)
	}
}

// TestOfflineRefusesWhatIsNotARequest: the offline command exits with an
// error naming the problem for a body that is not JSON or not a request
// of its format.
func TestOfflineRefusesWhatIsNotARequest(t *testing.T) {
	tests := []struct {
		name, body string
		args       []string
		want       string
	}{
		{"truncated JSON", `{bad`, nil, "is not valid JSON"},
		{"not JSON at all", `hello`, nil, "is not valid JSON"},
		{"trailing garbage", `{"model":"x","messages":[]} x`, nil, "is not valid JSON"},
		{"no messages", `{"model":"gpt-4o"}`, nil, "is not a chat completions request"},
		{"messages format without messages", `{"model":"claude-sonnet-4","system":"s"}`, nil, "is not an Anthropic Messages request"},
		{"responses format without input", `{"model":"gpt-5"}`, []string{"--format", "responses"}, "is not a Responses request"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "req.json")
			if err := os.WriteFile(file, []byte(tc.body), 0o600); err != nil {
				t.Fatal(err)
			}
			var out, errb bytes.Buffer
			err := Main(context.Background(), append(append([]string{"condense"}, tc.args...), file), &out, &errb, nil)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), file) {
				t.Fatalf("err = %v, want %q naming the file", err, tc.want)
			}
			if out.Len() != 0 {
				t.Errorf("wrote %q to stdout", out.String())
			}
		})
	}
}

// TestJSONLogDurations: serve's JSON log lines carry durations as short
// strings ("12.3ms"), not nanoseconds.
func TestJSONLogDurations(t *testing.T) {
	logs := &lockedBuffer{}
	base, _, stop := startServeLogs(t, logs, "--log-format", "json")
	resp, err := http.Post(base+"/v1/chat/completions", "application/json", strings.NewReader(`{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, line := range strings.Split(logs.String(), "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(line), &m) != nil {
			continue
		}
		for _, key := range []string{"duration", "grace"} {
			v, ok := m[key]
			if !ok {
				continue
			}
			found = true
			s, isStr := v.(string)
			if !isStr {
				t.Errorf("%s logged as %v (%T), want a string", key, v, v)
				continue
			}
			if _, err := time.ParseDuration(s); err != nil {
				t.Errorf("%s %q is not a duration", key, s)
			}
		}
	}
	if !found {
		t.Fatalf("no duration in the logs:\n%s", logs.String())
	}
}

func TestRoundDuration(t *testing.T) {
	for _, tc := range []struct {
		in   time.Duration
		want string
	}{
		{12345678, "12.3ms"},
		{1234567890, "1.23s"},
		{999, "999ns"},
		{0, "0s"},
		{90 * time.Minute, "1h30m0s"},
	} {
		if got := roundDuration(tc.in).String(); got != tc.want {
			t.Errorf("%d: %s, want %s", tc.in, got, tc.want)
		}
	}
}

// TestServeOnUnknownSettings: a YAML typo stops start-up naming the key
// and the nearest one; unknown CONDENSE_* variables get one warning.
func TestServeOnUnknownSettings(t *testing.T) {
	file := filepath.Join(t.TempDir(), "c.yaml")
	os.WriteFile(file, []byte("condense:\n  treshold: 0.6\n"), 0o600)
	var out, errb bytes.Buffer
	err := Main(context.Background(), []string{"serve", "--config", file}, &out, &errb, nil)
	if err == nil || !strings.Contains(err.Error(), "condense.treshold: unknown key (did you mean condense.threshold?)") {
		t.Fatalf("YAML typo: %v", err)
	}

	logs := &lockedBuffer{}
	_, _, stop := startServeWith(t, []string{"CONDENSE_TRESHOLD=0.6", "CONDENSE_UPSTREM=http://x", "CONDENSE_LOG_LEVEL=info"}, logs, "--log-format", "json")
	stop()
	if n := strings.Count(logs.String(), "set no configuration key"); n != 1 {
		t.Fatalf("%d warnings, want 1:\n%s", n, logs.String())
	}
	for _, w := range []string{"CONDENSE_TRESHOLD (did you mean CONDENSE_CONDENSE_THRESHOLD?)", "CONDENSE_UPSTREM (did you mean CONDENSE_UPSTREAM?)"} {
		if !strings.Contains(logs.String(), w) {
			t.Errorf("warning lacks %q:\n%s", w, logs.String())
		}
	}
	if strings.Contains(logs.String(), "CONDENSE_LOG_LEVEL") {
		t.Error("a known variable was warned about")
	}
}

// TestStartLineSaysWhoCanConnect: the start-up log line names the
// interfaces and whether the proxy is open; open beyond loopback, it
// warns.
func TestStartLineSaysWhoCanConnect(t *testing.T) {
	tests := []struct {
		name              string
		args              []string
		interfaces, conns string
		warned            bool
	}{
		{"loopback, open", []string{"--listen", "127.0.0.1:0"}, "loopback only", "open: no auth.keys", false},
		{"every interface, open", []string{"--listen", "0.0.0.0:0"}, "every interface", "open: no auth.keys", true},
		{"every interface, keys", []string{"--listen", "0.0.0.0:0", "--auth-keys", "k1,k2"}, "every interface", "auth.keys: 2 accepted keys", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			logs := &lockedBuffer{}
			_, _, stop := startServeLogs(t, logs, append(tc.args, "--log-format", "json")...)
			stop()
			var start map[string]any
			warned := false
			for _, line := range strings.Split(logs.String(), "\n") {
				var m map[string]any
				if json.Unmarshal([]byte(line), &m) != nil {
					continue
				}
				if m["msg"] == "condense-proxy listening" {
					start = m
				}
				if m["level"] == "WARN" && strings.Contains(fmt.Sprint(m["msg"]), "open to the network") {
					warned = true
				}
			}
			if start == nil {
				t.Fatalf("no start-up line:\n%s", logs.String())
			}
			if !strings.Contains(fmt.Sprint(start["interfaces"]), tc.interfaces) || !strings.Contains(fmt.Sprint(start["access"]), tc.conns) {
				t.Errorf("start-up line %v", start)
			}
			if warned != tc.warned {
				t.Errorf("warned %v, want %v:\n%s", warned, tc.warned, logs.String())
			}
		})
	}
	if d := (config.Defaults()).Listen; d != "127.0.0.1:8080" {
		t.Errorf("default listen %q, want loopback", d)
	}
}
