package proxy

import (
	"fmt"
	"strings"
	"testing"

	"github.com/condense-proxy/condense-proxy/condense"
)

// TestUnknownModeHeader: an unknown X-Condense-Mode gets the default mode,
// a response header saying which, and one warning per distinct value
// (however many requests carry it).
func TestUnknownModeHeader(t *testing.T) {
	h := newHarness(t, nil, func(o *Options) { o.DefaultMode = condense.ModeOff })
	tests := []struct {
		name, sent, want string
	}{
		{"known", "Selective", condense.ModeSelective},
		{"bogus", "bogus", condense.ModeOff},
		{"bogus again", "bogus", condense.ModeOff},
		{"bogus in other case", "BOGUS", condense.ModeOff},
		{"another", "fast", condense.ModeOff},
		{"none", "", condense.ModeOff},
	}
	for _, tc := range tests {
		hdr := map[string]string{}
		if tc.sent != "" {
			hdr[HeaderMode] = tc.sent
		}
		resp := post(t, h.proxy.URL+"/v1/chat/completions", []byte(chatBody), hdr)
		resp.Body.Close()
		if got := resp.Header.Get(HeaderMode); got != tc.want {
			t.Errorf("%s: %s %q, want %q", tc.name, HeaderMode, got, tc.want)
		}
	}
	h.waitLog(t, `"value":"fast"`)
	logs := h.logs.String()
	if n := strings.Count(logs, `"value":"bogus"`); n != 1 {
		t.Errorf("bogus warned %d times, want once:\n%s", n, logs)
	}
	if n := strings.Count(logs, `unknown X-Condense-Mode value`); n != 2 {
		t.Errorf("%d warnings for 2 distinct values", n)
	}
}

// TestUnknownModesLoggedBounded: past maxLoggedModes distinct values, new
// ones are no longer warned about, and a long value is cut.
func TestUnknownModesLoggedBounded(t *testing.T) {
	h := newHarness(t, nil)
	for i := range maxLoggedModes + 10 {
		resp := post(t, h.proxy.URL+"/v1/chat/completions", []byte(chatBody),
			map[string]string{HeaderMode: fmt.Sprint("bogus-", i, "-", strings.Repeat("z", 4000))})
		resp.Body.Close()
	}
	h.waitLog(t, fmt.Sprintf("bogus-%d-", maxLoggedModes+9))
	logs := h.logs.String()
	if n := strings.Count(logs, `unknown X-Condense-Mode value`); n != maxLoggedModes {
		t.Errorf("%d warnings, want %d", n, maxLoggedModes)
	}
	if strings.Contains(logs, strings.Repeat("z", 200)) {
		t.Error("a 4000-byte header value reached the log whole")
	}
}

// TestModelNameBounded: a huge model name is cut, with a hash, on the
// log line and in what the Recorder gets; two such names stay apart.
func TestModelNameBounded(t *testing.T) {
	rec := make(chanRecorder, 4)
	h := newHarness(t, nil, func(o *Options) { o.Recorder = rec })
	var models []string
	for _, c := range []string{"a", "b"} {
		model := strings.Repeat("m", 1<<20) + c
		body := `{"model":"` + model + `","messages":[{"role":"user","content":"hi"}]}`
		resp := post(t, h.proxy.URL+"/v1/chat/completions", []byte(body), nil)
		resp.Body.Close()
		ev := rec.next(t)
		if len(ev.Report.Model) > MaxModelName || !strings.HasPrefix(ev.Report.Model, "mmmm") {
			t.Fatalf("recorded model of %d bytes: %.200q", len(ev.Report.Model), ev.Report.Model)
		}
		models = append(models, ev.Report.Model)
	}
	if models[0] == models[1] {
		t.Errorf("two long names recorded as one: %q", models[0])
	}
	h.waitLog(t, models[1])
	for _, line := range strings.Split(h.logs.String(), "\n") {
		if len(line) > 4096 {
			t.Errorf("log line of %d bytes", len(line))
		}
	}
}

func TestModelName(t *testing.T) {
	long := strings.Repeat("é", 200) // 400 bytes, cut inside a character
	tests := []struct {
		name, in string
		same     bool
	}{
		{"short", "gpt-4o", true},
		{"exactly the bound", strings.Repeat("x", MaxModelName), true},
		{"one over", strings.Repeat("x", MaxModelName+1), false},
		{"multi-byte", long, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := ModelName(tc.in)
			if (got == tc.in) != tc.same || len(got) > MaxModelName || !utf8Valid(got) {
				t.Fatalf("ModelName(%d bytes) = %q (%d bytes)", len(tc.in), got, len(got))
			}
			if again := ModelName(got); again != got {
				t.Errorf("not idempotent: %q → %q", got, again)
			}
		})
	}
	if ModelName(long+"a") == ModelName(long+"b") {
		t.Error("two long names map to one")
	}
}

func utf8Valid(s string) bool { return strings.ToValidUTF8(s, "\uFFFD") == s }
