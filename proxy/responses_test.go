package proxy

import (
	"bufio"
	"bytes"
	"crypto/sha1"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/condense-proxy/condense-proxy/codec/chat"
	"github.com/condense-proxy/condense-proxy/codec/responses"
	"github.com/condense-proxy/condense-proxy/condense"
	"github.com/condense-proxy/condense-proxy/jsonscan"
	"github.com/condense-proxy/condense-proxy/llm"
	"github.com/condense-proxy/condense-proxy/tokenizer"
)

// responsesBody is a Codex-like Responses request of n turns: developer
// prompt, task, then reasoning + exec_command call + large output per
// turn, with the fields Codex sends around the input.
func responsesBody(n int, extra string) []byte {
	items := []string{
		`{"type":"message","role":"developer","content":[{"type":"input_text","text":"You are Codex."}]}`,
		`{"type":"message","role":"user","content":[{"type":"input_text","text":"Fix TestParseDuration."}]}`,
	}
	for i := 0; i < n; i++ {
		var out strings.Builder
		for l := 0; l < 120; l++ {
			fmt.Fprintf(&out, "\tv%d := compute(%d, %d) // pkg/file%d.go\n", l, i, l*7919%1000, i)
		}
		o, _ := json.Marshal(out.String())
		items = append(items,
			fmt.Sprintf(`{"type":"reasoning","id":"rs_%d","summary":[{"type":"summary_text","text":"Reading file %d."}],"encrypted_content":"ZW5jcnlwdGVk%04d"}`, i, i, i),
			fmt.Sprintf(`{"type":"function_call","id":"fc_%d","name":"exec_command","arguments":"{\"cmd\":\"cat pkg/file%d.go\"}","call_id":"call_%d"}`, i, i, i),
			fmt.Sprintf(`{"type":"function_call_output","call_id":"call_%d","output":%s}`, i, o))
	}
	return []byte(`{"model":"gpt-5-codex","input":[` + strings.Join(items, ",") + `],"tools":[{"type":"function","name":"exec_command","parameters":{"type":"object"}}],` +
		`"reasoning":{"effort":"medium"},"store":false,"stream":true,"include":["reasoning.encrypted_content"],"prompt_cache_key":"pck-1",` +
		`"text":{"verbosity":"low"},"client_metadata":{"originator":"codex_exec"},"x_unknown":[1,{"a":null}]` + extra + `}`)
}

// smallWindowEngine condenses above 80% of a 16k window, extractively.
func smallWindowEngine() *condense.Engine {
	return condense.New(condense.Deps{Counter: tokenizer.New(tokenizer.Options{}), Models: condense.ModelsFunc(func(string) condense.ModelLimits {
		return condense.ModelLimits{Window: 16000, Threshold: 0.8, Encoding: tokenizer.O200kBase, SafetyFactor: 1}
	})}, condense.Options{Summarizer: "extractive", SelectiveEnabled: true})
}

// outsideInput returns the body without its input array value.
func outsideInput(t *testing.T, body []byte) string {
	t.Helper()
	obj, ok := jsonscan.ScanObject(body, "input")
	if !ok || obj.Array[1] == 0 {
		t.Fatalf("not a Responses body: %.200s", body)
	}
	return string(body[:obj.Array[0]]) + string(body[obj.Array[1]:])
}

func TestResponsesCondensed(t *testing.T) {
	body := responsesBody(40, "")
	for _, path := range []string{"/v1/responses", "/responses"} {
		for _, mode := range []string{"full", "selective", "truncate", "auto"} {
			t.Run(path+"/"+mode, func(t *testing.T) {
				h := newHarness(t, nil, func(o *Options) { o.Condenser = smallWindowEngine() })
				resp := post(t, h.proxy.URL+path, body, map[string]string{"X-Condense-Mode": mode, "Authorization": "Bearer k"})
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				got := h.fake.Received()
				if len(got) != 1 || got[0].Path != path {
					t.Fatalf("upstream got %v", got)
				}
				fwd := got[0].Body
				if a := resp.Header.Get(HeaderApplied); a == "" || a == "none" {
					t.Fatalf("applied %q", a)
				}
				before, _ := strconv.Atoi(resp.Header.Get(HeaderTokensBefore))
				after, _ := strconv.Atoi(resp.Header.Get(HeaderTokensAfter))
				if len(fwd) >= len(body) || after >= before || after > 16000 {
					t.Fatalf("not smaller: %d bytes of %d; %d tokens of %d", len(fwd), len(body), after, before)
				}
				if outsideInput(t, fwd) != outsideInput(t, body) {
					t.Fatal("fields outside input changed")
				}
				in := gjson.GetBytes(fwd, "input").Array()
				if in[0].Raw != gjson.GetBytes(body, "input.0").Raw || in[len(in)-1].Raw != gjson.GetBytes(body, "input.@reverse.0").Raw {
					t.Fatal("head or last item changed")
				}
				if got[0].Header.Get("Authorization") != "Bearer k" || got[0].Header.Get(HeaderMode) != "" {
					t.Fatal("headers not forwarded as they should be")
				}
			})
		}
	}
}

func TestResponsesUnderThresholdByteIdentical(t *testing.T) {
	h := newHarness(t, nil)
	body := responsesBody(3, "")
	resp := post(t, h.proxy.URL+"/v1/responses", body, nil)
	resp.Body.Close()
	if got := h.fake.Received(); len(got) != 1 || !bytes.Equal(got[0].Body, body) {
		t.Fatal("body changed under the threshold")
	}
	if resp.Header.Get(HeaderApplied) != "none" || resp.Header.Get(HeaderTokensBefore) == "" {
		t.Fatalf("headers %v", resp.Header)
	}
}

// A request continuing server-side state is forwarded untouched even far
// over the threshold, and the response says why.
func TestResponsesPreviousResponseIDUntouched(t *testing.T) {
	h := newHarness(t, nil, func(o *Options) { o.Condenser = smallWindowEngine() })
	body := responsesBody(40, `,"previous_response_id":"resp_123"`)
	resp := post(t, h.proxy.URL+"/v1/responses", body, map[string]string{"X-Condense-Mode": "full"})
	resp.Body.Close()
	if got := h.fake.Received(); len(got) != 1 || !bytes.Equal(got[0].Body, body) {
		t.Fatal("body changed")
	}
	if resp.Header.Get(HeaderApplied) != "none" || !strings.Contains(resp.Header.Get(HeaderDegraded), "previous_response_id continues server-side state; not condensed") {
		t.Fatalf("applied %q, degraded %q", resp.Header.Get(HeaderApplied), resp.Header.Get(HeaderDegraded))
	}
	// The log line says it as data too.
	logs := h.waitLog(t, `"degraded_kinds"`)
	if !strings.Contains(logs, `"reason_path":"`+condense.PathUntouchable+","+condense.PathForwardedUnchanged+`"`) ||
		!strings.Contains(logs, `"degraded_kinds":"`+condense.DegradedUntouchable+`"`) {
		t.Errorf("log line: %s", logs)
	}
}

// Codex may send zstd bodies (ChatGPT login); gzip too: decoded, counted,
// condensed and forwarded decoded.
func TestResponsesContentEncoding(t *testing.T) {
	body := responsesBody(40, "")
	for _, enc := range []string{"zstd", "gzip"} {
		t.Run(enc, func(t *testing.T) {
			h := newHarness(t, nil, func(o *Options) { o.Condenser = smallWindowEngine() })
			resp := post(t, h.proxy.URL+"/v1/responses", compress(t, enc, body), map[string]string{"Content-Encoding": enc})
			resp.Body.Close()
			got := h.fake.Received()
			if len(got) != 1 || got[0].Header.Get("Content-Encoding") != "" || !gjson.ValidBytes(got[0].Body) {
				t.Fatalf("upstream did not get a decoded body")
			}
			if a := resp.Header.Get(HeaderApplied); a == "" || a == "none" {
				t.Fatalf("not condensed: %q", a)
			}
		})
	}
}

// responsesStream is an upstream answering with the SSE sequence Codex
// accepts, one event at a time: each next event waits for the test.
type responsesStream struct{ next chan struct{} }

var responsesEvents = []string{
	`{"type":"response.created","response":{"id":"resp_1","status":"in_progress"}}`,
	`{"type":"response.output_item.added","output_index":0,"item":{"type":"message","role":"assistant","content":[]}}`,
	`{"type":"response.output_text.delta","output_index":0,"delta":"Hello"}`,
	`{"type":"response.output_item.done","output_index":0,"item":{"type":"message","role":"assistant","content":[{"type":"output_text","text":"Hello"}]}}`,
	`{"type":"response.completed","response":{"id":"resp_1","status":"completed","usage":{"input_tokens":10,"output_tokens":1,"total_tokens":11}}}`,
}

func (s *responsesStream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	io.Copy(io.Discard, r.Body)
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(200)
	for i, ev := range responsesEvents {
		if i > 0 {
			select {
			case <-s.next:
			case <-r.Context().Done():
				return
			}
		}
		typ := gjson.Get(ev, "type").Str
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", typ, ev)
		w.(http.Flusher).Flush()
	}
}

func TestResponsesStreamEventByEvent(t *testing.T) {
	up := &responsesStream{next: make(chan struct{})}
	h := newHarness(t, up)
	resp := post(t, h.proxy.URL+"/v1/responses", responsesBody(2, ""), nil)
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("content type %q", ct)
	}
	br := bufio.NewReader(resp.Body)
	for i, ev := range responsesEvents {
		// The event must arrive before the upstream is allowed to send
		// the next one.
		var lines []string
		for {
			line, err := br.ReadString('\n')
			if err != nil {
				t.Fatalf("event %d: %v", i, err)
			}
			if line == "\n" {
				break
			}
			lines = append(lines, strings.TrimSuffix(line, "\n"))
		}
		want := []string{"event: " + gjson.Get(ev, "type").Str, "data: " + ev}
		if strings.Join(lines, "\n") != strings.Join(want, "\n") {
			t.Fatalf("event %d: got %q", i, lines)
		}
		if i+1 < len(responsesEvents) {
			up.next <- struct{}{}
		}
	}
	if rest, _ := io.ReadAll(br); len(rest) != 0 {
		t.Fatalf("after response.completed: %q", rest)
	}
}

// wsUpstream completes a WebSocket handshake on /v1/responses and echoes
// whatever bytes arrive over the hijacked connection.
func wsUpstream(t *testing.T, got chan<- http.Header) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet || r.URL.Path != "/v1/responses" || !strings.EqualFold(r.Header.Get("Upgrade"), "websocket") {
			http.Error(w, "want a websocket upgrade", http.StatusBadRequest)
			return
		}
		got <- r.Header.Clone()
		conn, brw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			t.Error(err)
			return
		}
		defer conn.Close()
		fmt.Fprintf(brw, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: %s\r\n\r\n", wsAccept(r.Header.Get("Sec-WebSocket-Key")))
		brw.Flush()
		buf := make([]byte, 4096)
		for {
			n, err := brw.Read(buf)
			if n > 0 {
				conn.Write(buf[:n])
			}
			if err != nil {
				return
			}
		}
	})
}

func wsAccept(key string) string {
	h := sha1.Sum([]byte(key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"))
	return base64.StdEncoding.EncodeToString(h[:])
}

// wsHandshake dials addr and sends a WebSocket upgrade for /v1/responses;
// every read and write has a deadline, so a hang fails the test.
func wsHandshake(t *testing.T, addr string) (net.Conn, *bufio.Reader, *http.Response) {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	conn.SetDeadline(time.Now().Add(5 * time.Second))
	fmt.Fprintf(conn, "GET /v1/responses HTTP/1.1\r\nHost: %s\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nAuthorization: Bearer k\r\nX-Condense-Mode: full\r\n\r\n", addr)
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("no answer to the upgrade (a hang?): %v", err)
	}
	return conn, br, resp
}

func TestResponsesWebSocketPassesThrough(t *testing.T) {
	headers := make(chan http.Header, 1)
	h := newHarness(t, wsUpstream(t, headers))
	conn, br, resp := wsHandshake(t, strings.TrimPrefix(h.proxy.URL, "http://"))
	if resp.StatusCode != http.StatusSwitchingProtocols || resp.Header.Get("Sec-WebSocket-Accept") != wsAccept("dGhlIHNhbXBsZSBub25jZQ==") {
		t.Fatalf("status %d, headers %v", resp.StatusCode, resp.Header)
	}
	up := <-headers
	if up.Get("Authorization") != "Bearer k" || up.Get(HeaderMode) != "" || up.Get("Sec-WebSocket-Key") == "" {
		t.Fatalf("upstream headers %v", up)
	}
	// A masked text frame carrying a response.create event.
	payload := []byte(`{"type":"response.create","model":"gpt-5-codex"}`)
	frame := []byte{0x81, 0x80 | byte(len(payload)), 1, 2, 3, 4}
	for i, b := range payload {
		frame = append(frame, b^[]byte{1, 2, 3, 4}[i%4])
	}
	if _, err := conn.Write(frame); err != nil {
		t.Fatal(err)
	}
	echo := make([]byte, len(frame))
	if _, err := io.ReadFull(br, echo); err != nil {
		t.Fatalf("no echo over the upgraded connection: %v", err)
	}
	if !bytes.Equal(echo, frame) {
		t.Fatalf("echo %x, want %x", echo, frame)
	}
	conn.Close()
	logs := h.waitLog(t, `"status":101`)
	if !strings.Contains(logs, `"status":101`) {
		t.Errorf("the upgrade was not logged with status 101: %s", logs)
	}
}

func TestResponsesWebSocketRefusedFast(t *testing.T) {
	for _, status := range []int{http.StatusNotFound, http.StatusUpgradeRequired} {
		t.Run(fmt.Sprint(status), func(t *testing.T) {
			var once sync.Once
			calls := make(chan struct{}, 1)
			h := newHarness(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				once.Do(func() { calls <- struct{}{} })
				http.Error(w, "websockets are not served here", status)
			}))
			start := time.Now()
			_, _, resp := wsHandshake(t, strings.TrimPrefix(h.proxy.URL, "http://"))
			if resp.StatusCode != status {
				t.Fatalf("status %d, want %d", resp.StatusCode, status)
			}
			body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<10))
			if err != nil || !strings.Contains(string(body), "websockets are not served here") {
				t.Fatalf("body %q %v", body, err)
			}
			<-calls
			if d := time.Since(start); d > 3*time.Second {
				t.Fatalf("refusal took %s", d)
			}
		})
	}
}

// Without an upstream at all, an upgrade gets 502 at once.
func TestResponsesWebSocketUpstreamDown(t *testing.T) {
	dead := httptest.NewServer(http.NotFoundHandler())
	u, _ := url.Parse(dead.URL)
	dead.Close()
	p := httptest.NewServer(New(Options{Upstream: u, Condenser: testEngine(), Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}))
	defer p.Close()
	_, _, resp := wsHandshake(t, strings.TrimPrefix(p.URL, "http://"))
	if resp.StatusCode != http.StatusBadGateway {
		t.Fatalf("status %d", resp.StatusCode)
	}
}

// TestResponsesSummariesAskedInResponsesFormat: with the LLM summarizer,
// the summaries of a Responses request are asked of the upstream's
// /v1/responses (store:false, the caller's credentials), and the summary
// reaches the forwarded request.
func TestResponsesSummariesAskedInResponsesFormat(t *testing.T) {
	var mu sync.Mutex
	var summaryCalls []*http.Request
	var summaryBodies [][]byte
	var forwarded []byte
	up := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		defer mu.Unlock()
		if strings.Contains(gjson.GetBytes(body, "instructions").Str, "condense-proxy summarizer") {
			summaryCalls = append(summaryCalls, r)
			summaryBodies = append(summaryBodies, body)
			io.WriteString(w, `{"id":"resp_s","status":"completed","output":[{"type":"message","role":"assistant","content":[{"type":"output_text","text":"## Task and intent\n- LLM-SUMMARY-MARK"}]}]}`)
			return
		}
		forwarded = body
		io.WriteString(w, `{"id":"resp_1","status":"completed","output":[]}`)
	})
	srv := httptest.NewServer(up)
	defer srv.Close()
	u, _ := url.Parse(srv.URL)
	counter := tokenizer.New(tokenizer.Options{})
	eng := condense.New(condense.Deps{Counter: counter, Models: condense.ModelsFunc(func(string) condense.ModelLimits {
		return condense.ModelLimits{Window: 16000, Threshold: 0.8, Encoding: tokenizer.O200kBase, SafetyFactor: 1}
	}), Summarizer: &llm.Summarizer{Client: &llm.Client{BaseURL: u, Codec: chat.New(nil)}, Clients: []*llm.Client{{BaseURL: u, Codec: responses.New(nil)}}}},
		condense.Options{Summarizer: "llm", ChunkTokens: 2000, SummaryBudgetTokens: 2000, MaxSummarizerCalls: 1000})
	p := httptest.NewServer(New(Options{Upstream: u, Condenser: eng, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}))
	defer p.Close()
	resp := post(t, p.URL+"/v1/responses", responsesBody(40, ""), map[string]string{"X-Condense-Mode": "full", "Authorization": "Bearer caller"})
	resp.Body.Close()
	mu.Lock()
	defer mu.Unlock()
	if resp.Header.Get(HeaderApplied) != "full" || resp.Header.Get(HeaderSummaries) == "" || strings.Contains(resp.Header.Get(HeaderDegraded), "summarizer") {
		t.Fatalf("applied %q summaries %q degraded %q", resp.Header.Get(HeaderApplied), resp.Header.Get(HeaderSummaries), resp.Header.Get(HeaderDegraded))
	}
	if len(summaryCalls) == 0 {
		t.Fatal("no summarizer call")
	}
	for i, r := range summaryCalls {
		b := summaryBodies[i]
		if r.URL.Path != "/v1/responses" || r.Header.Get("Authorization") != "Bearer caller" ||
			gjson.GetBytes(b, "store").Type != gjson.False || gjson.GetBytes(b, "input.0.content.0.type").Str != "input_text" ||
			!strings.Contains(gjson.GetBytes(b, "input.0.content.0.text").Str, "exec_command") {
			t.Fatalf("summary call %s %s", r.URL.Path, b)
		}
	}
	if !bytes.Contains(forwarded, []byte("LLM-SUMMARY-MARK")) {
		t.Fatal("the summary did not reach the forwarded request")
	}
}
