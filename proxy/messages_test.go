package proxy

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/condense-proxy/condense-proxy/jsonscan"
)

// messagesBody is a Claude Code-like Messages request of n tool steps.
func messagesBody(n int) []byte {
	msgs := []string{`{"role":"user","content":[{"type":"text","text":"Fix TestParseDuration."}]}`}
	for i := 0; i < n; i++ {
		var out strings.Builder
		for l := 0; l < 120; l++ {
			fmt.Fprintf(&out, "\tv%d := compute(%d, %d) // pkg/file%d.go\n", l, i, l*7919%1000, i)
		}
		o, _ := json.Marshal(out.String())
		msgs = append(msgs,
			fmt.Sprintf(`{"role":"assistant","content":[{"type":"text","text":"Reading file %d."},{"type":"tool_use","id":"toolu_%d","name":"Read","input":{"file_path":"pkg/file%d.go"}}]}`, i, i, i),
			fmt.Sprintf(`{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_%d","content":%s}]}`, i, o))
	}
	return []byte(`{"model":"claude-sonnet-4-5","max_tokens":32000,"system":[{"type":"text","text":"You are Claude Code.","cache_control":{"type":"ephemeral"}}],` +
		`"tools":[{"name":"Read","description":"Read a file","input_schema":{"type":"object"}}],"metadata":{"user_id":"u"},"messages":[` + strings.Join(msgs, ",") + `],"stream":true}`)
}

// anthropicUpstream records what it gets and answers as Anthropic does:
// {"input_tokens": N} on count_tokens (N: the body's length / 4), a short
// message otherwise.
type anthropicUpstream struct {
	mu  sync.Mutex
	got []recorded
}

type recorded struct {
	path, query string
	header      http.Header
	body        []byte
}

func (a *anthropicUpstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	a.mu.Lock()
	a.got = append(a.got, recorded{r.URL.Path, r.URL.RawQuery, r.Header.Clone(), b})
	a.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	if strings.HasSuffix(r.URL.Path, "/count_tokens") {
		fmt.Fprintf(w, `{"input_tokens":%d}`, len(b)/4)
		return
	}
	w.Write([]byte(`{"id":"msg_1","type":"message","role":"assistant","content":[{"type":"text","text":"ok"}],"stop_reason":"end_turn","usage":{"input_tokens":1,"output_tokens":1}}`))
}

func (a *anthropicUpstream) received() []recorded {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]recorded(nil), a.got...)
}

// TestMessagesCondensed: /v1/messages (query kept) is condensed; fields
// outside messages and Anthropic's headers pass untouched.
func TestMessagesCondensed(t *testing.T) {
	up := &anthropicUpstream{}
	h := newHarness(t, up, func(o *Options) { o.Condenser = smallWindowEngine() })
	body := messagesBody(40)
	resp := post(t, h.proxy.URL+"/v1/messages?beta=true", body, map[string]string{
		"x-api-key": "sk-ant-1", "anthropic-version": "2023-06-01", "anthropic-beta": "claude-code-20250219", "X-Stainless-Lang": "js"})
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	got := up.received()
	if len(got) != 1 || got[0].path != "/v1/messages" || got[0].query != "beta=true" {
		t.Fatalf("upstream got %+v", got)
	}
	if a := resp.Header.Get(HeaderApplied); a == "" || a == "none" {
		t.Fatalf("applied %q", a)
	}
	fwd := got[0].body
	if len(fwd) >= len(body) {
		t.Fatalf("not smaller: %d of %d bytes", len(fwd), len(body))
	}
	outside := func(b []byte) string {
		obj, _ := jsonscan.ScanObject(b, "messages")
		return string(b[:obj.Array[0]]) + string(b[obj.Array[1]:])
	}
	if outside(fwd) != outside(body) {
		t.Error("fields outside messages changed")
	}
	for k, v := range map[string]string{"X-Api-Key": "sk-ant-1", "Anthropic-Version": "2023-06-01", "Anthropic-Beta": "claude-code-20250219", "X-Stainless-Lang": "js"} {
		if got[0].header.Get(k) != v {
			t.Errorf("header %s: %q", k, got[0].header.Get(k))
		}
	}
}

// TestCountTokensCountsWhatWouldBeForwarded: count_tokens over the
// threshold goes upstream as the very body /v1/messages would forward, so
// the count the agent gets describes its next request as sent; under the
// threshold it passes untouched; neither counts in the metrics.
func TestCountTokensCountsWhatWouldBeForwarded(t *testing.T) {
	up := &anthropicUpstream{}
	h := newHarness(t, up, func(o *Options) { o.Condenser = smallWindowEngine() })
	body := messagesBody(40)
	count := post(t, h.proxy.URL+"/v1/messages/count_tokens?beta=true", body, map[string]string{"x-api-key": "k"})
	answer, _ := io.ReadAll(count.Body)
	count.Body.Close()
	if m := metricsText(t, h.proxy.URL); strings.Contains(m, "condense_forwarded_tokens_total{") {
		t.Errorf("a count_tokens request counted as forwarded:\n%s", m)
	}
	msg := post(t, h.proxy.URL+"/v1/messages?beta=true", body, map[string]string{"x-api-key": "k"})
	io.Copy(io.Discard, msg.Body)
	msg.Body.Close()
	got := up.received()
	if len(got) != 2 || got[0].path != "/v1/messages/count_tokens" || got[0].query != "beta=true" {
		t.Fatalf("upstream got %d requests", len(got))
	}
	if string(got[0].body) != string(got[1].body) || len(got[0].body) >= len(body) {
		t.Fatalf("count_tokens counted %d bytes, the message forwarded %d (received %d)", len(got[0].body), len(got[1].body), len(body))
	}
	if n := gjson.GetBytes(answer, "input_tokens").Int(); n != int64(len(got[1].body)/4) {
		t.Errorf("count answer %s", answer)
	}
	small := messagesBody(1)
	resp := post(t, h.proxy.URL+"/v1/messages/count_tokens", small, nil)
	resp.Body.Close()
	if got := up.received(); string(got[2].body) != string(small) {
		t.Error("a count under the threshold was changed")
	}
	if m := metricsText(t, h.proxy.URL); !strings.Contains(m, "condense_forwarded_tokens_total{") {
		t.Errorf("the message was not counted as forwarded")
	}
}

func metricsText(t *testing.T, base string) string {
	t.Helper()
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

// TestMessagesErrorsInAnthropicShape: the proxy's own refusals on the
// Messages routes are Anthropic errors, elsewhere OpenAI's.
func TestMessagesErrorsInAnthropicShape(t *testing.T) {
	h := newHarness(t, &anthropicUpstream{}, func(o *Options) { o.MaxBodyBytes = 100 })
	for path, anthropic := range map[string]bool{"/v1/messages": true, "/v1/messages/count_tokens": true, "/v1/chat/completions": false} {
		resp := post(t, h.proxy.URL+path, messagesBody(2), nil)
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		g := gjson.ParseBytes(b)
		if resp.StatusCode != http.StatusRequestEntityTooLarge {
			t.Fatalf("%s: status %d", path, resp.StatusCode)
		}
		if anthropic && (g.Get("type").Str != "error" || g.Get("error.type").Str != "request_too_large" || g.Get("error.message").Str == "") {
			t.Errorf("%s: %s", path, b)
		}
		if !anthropic && g.Get("error.type").Str != "invalid_request_error" {
			t.Errorf("%s: %s", path, b)
		}
	}
}

func TestAddListHeader(t *testing.T) {
	for _, tc := range []struct {
		have []string
		want string
	}{
		{nil, "b"},
		{[]string{"a"}, "a,b"},
		{[]string{"a, b"}, "a, b"},
		{[]string{"b"}, "b"},
	} {
		h := http.Header{}
		for _, v := range tc.have {
			h.Add("Anthropic-Beta", v)
		}
		addListHeader(h, "Anthropic-Beta", "b")
		if got := strings.Join(h.Values("Anthropic-Beta"), ";"); got != tc.want {
			t.Errorf("%v: %q, want %q", tc.have, got, tc.want)
		}
	}
}
