package proxy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/condense-proxy/condense-proxy/condense"
	"github.com/condense-proxy/condense-proxy/tokenizer"
)

// sizedResponses is a Codex-like Responses body of about size bytes:
// reasoning, an exec_command call and its output per turn.
func sizedResponses(size int) []byte {
	items := []string{`{"type":"message","role":"developer","content":[{"type":"input_text","text":"You are Codex."}]}`,
		`{"type":"message","role":"user","content":[{"type":"input_text","text":"Fix the test."}]}`}
	n := 0
	for i := 0; n < size; i++ {
		out, _ := json.Marshal(strings.Repeat(fmt.Sprintf("line %d of a tool output: ok\n", i), 40))
		items = append(items,
			fmt.Sprintf(`{"type":"reasoning","id":"rs_%d","summary":[],"encrypted_content":"%s"}`, i, strings.Repeat("QUJD", 100)),
			fmt.Sprintf(`{"type":"function_call","name":"exec_command","arguments":"{\"cmd\":\"cat f%d\"}","call_id":"c%d"}`, i, i),
			fmt.Sprintf(`{"type":"function_call_output","call_id":"c%d","output":%s}`, i, out))
		n += len(out) + 600
	}
	return []byte(`{"model":"gpt-5-codex","input":[` + strings.Join(items, ",") + `],"store":false,"include":["reasoning.encrypted_content"]}`)
}

// BenchmarkResponsesPassThroughOverhead is BenchmarkPassThroughOverhead for
// POST /v1/responses: the same Responses body through a bare
// httputil.ReverseProxy and through condense-proxy (warm count cache,
// under threshold), alternating; the added median latency.
func BenchmarkResponsesPassThroughOverhead(b *testing.B) {
	benchFormatPassThrough(b, "/v1/responses", sizedResponses, `{"id":"resp_1","status":"completed","output":[]}`)
}

// BenchmarkMessagesPassThroughOverhead is the same for POST /v1/messages
// with a Claude Code-like body.
func BenchmarkMessagesPassThroughOverhead(b *testing.B) {
	benchFormatPassThrough(b, "/v1/messages", sizedMessages, `{"id":"msg_1","type":"message","role":"assistant","content":[]}`)
}

// sizedMessages is a Claude Code-like Messages body of about size bytes:
// a signed-looking thinking block, a Read call and its result per turn.
func sizedMessages(size int) []byte {
	msgs := []string{`{"role":"user","content":[{"type":"text","text":"Fix the test."}]}`}
	n := 0
	for i := 0; n < size; i++ {
		out, _ := json.Marshal(strings.Repeat(fmt.Sprintf("line %d of a tool output: ok\n", i), 40))
		msgs = append(msgs,
			fmt.Sprintf(`{"role":"assistant","content":[{"type":"thinking","thinking":"Read f%d.","signature":"%s"},{"type":"tool_use","id":"toolu_%d","name":"Read","input":{"file_path":"f%d"}}]}`, i, strings.Repeat("QUJD", 100), i, i),
			fmt.Sprintf(`{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_%d","content":%s}]}`, i, out))
		n += len(out) + 600
	}
	return []byte(`{"model":"claude-sonnet-4-5","max_tokens":32000,"system":[{"type":"text","text":"You are Claude Code."}],"messages":[` + strings.Join(msgs, ",") + `],"stream":true}`)
}

// benchFormatPassThrough sends bodies of 10 KB, 100 KB and 1 MB to path
// through a bare httputil.ReverseProxy and through condense-proxy (warm
// count cache, under threshold), alternating; the added median latency.
func benchFormatPassThrough(b *testing.B, path string, sized func(int) []byte, answer string) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, answer)
	}))
	defer up.Close()
	u, _ := url.Parse(up.URL)
	tr := NewTransport(TransportOptions{})
	bare := httptest.NewServer(&httputil.ReverseProxy{Rewrite: func(pr *httputil.ProxyRequest) { pr.SetURL(u) }, Transport: tr})
	defer bare.Close()
	big := condense.New(condense.Deps{Counter: tokenizer.New(tokenizer.Options{}), Models: condense.ModelsFunc(func(string) condense.ModelLimits {
		return condense.ModelLimits{Window: 4_000_000, Threshold: 0.8, Encoding: tokenizer.O200kBase, SafetyFactor: 1}
	})}, condense.Options{})
	ours := httptest.NewServer(New(Options{Upstream: u, Condenser: big, Transport: tr,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}))
	defer ours.Close()
	client := &http.Client{Transport: NewTransport(TransportOptions{})}
	send := func(base string, body []byte) time.Duration {
		t0 := time.Now()
		resp, err := client.Post(base+path, "application/json", bytes.NewReader(body))
		if err != nil {
			b.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			b.Fatalf("status %d", resp.StatusCode)
		}
		if a := resp.Header.Get(HeaderApplied); base == ours.URL && a != "none" {
			b.Fatalf("applied %q: not a counted pass-through", a)
		}
		return time.Since(t0)
	}
	for _, size := range []int{10 << 10, 100 << 10, 1 << 20} {
		body := sized(size)
		b.Run(fmt.Sprintf("%dKB", size>>10), func(b *testing.B) {
			send(ours.URL, body) // warm the count cache
			var tb, to []time.Duration
			var cb, co time.Duration
			b.SetBytes(int64(len(body)))
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				c0 := processCPU()
				tb = append(tb, send(bare.URL, body))
				c1 := processCPU()
				to = append(to, send(ours.URL, body))
				cb, co = cb+c1-c0, co+processCPU()-c1
			}
			b.StopTimer()
			pb, po := p50(tb), p50(to)
			b.ReportMetric(float64(pb.Microseconds())/1000, "bare-p50-ms")
			b.ReportMetric(float64(po.Microseconds())/1000, "proxy-p50-ms")
			b.ReportMetric(float64((po-pb).Microseconds())/1000, "added-p50-ms")
			b.ReportMetric(float64((co-cb).Microseconds())/1000/float64(b.N), "added-cpu-ms")
		})
	}
}

// BenchmarkGeminiPassThroughOverhead is the same for POST
// /v1beta/models/{model}:generateContent with a Gemini CLI-like body.
func BenchmarkGeminiPassThroughOverhead(b *testing.B) {
	benchFormatPassThrough(b, "/v1beta/models/gemini-2.5-pro:generateContent", sizedGemini,
		`{"candidates":[{"content":{"role":"model","parts":[{"text":"ok"}]},"finishReason":"STOP","index":0}]}`)
}

// sizedGemini is a Gemini CLI-like body of about size bytes: a model
// content with a signed read_file call and the user content answering it
// per turn.
func sizedGemini(size int) []byte {
	cs := []string{`{"role":"user","parts":[{"text":"Fix the test."}]}`}
	n := 0
	for i := 0; n < size; i++ {
		out, _ := json.Marshal(strings.Repeat(fmt.Sprintf("line %d of a tool output: ok\n", i), 40))
		cs = append(cs,
			fmt.Sprintf(`{"role":"model","parts":[{"text":"Reading f%d."},{"functionCall":{"id":"c%d","name":"read_file","args":{"absolute_path":"/f%d"}},"thoughtSignature":"%s"}]}`, i, i, i, strings.Repeat("QUJD", 100)),
			fmt.Sprintf(`{"role":"user","parts":[{"functionResponse":{"id":"c%d","name":"read_file","response":{"output":%s}}}]}`, i, out))
		n += len(out) + 600
	}
	return []byte(`{"contents":[` + strings.Join(cs, ",") + `],"systemInstruction":{"role":"user","parts":[{"text":"You are an interactive CLI agent."}]},"generationConfig":{"temperature":0}}`)
}
