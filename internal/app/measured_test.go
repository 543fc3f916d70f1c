package app_test

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"
	"log/slog"
	"math"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/condense-proxy/condense-proxy/config"
	"github.com/condense-proxy/condense-proxy/internal/app"
	"github.com/condense-proxy/condense-proxy/internal/fakeupstream"
	"github.com/condense-proxy/condense-proxy/proxy"
)

// measuredCase is one format's answers: the usage its fake reports and
// the measured bill it makes at its model's prices (registry: gpt-4o
// reads at 0.5, writes free; Claude reads at 0.1, writes at 1.25, 1-hour
// writes at 2; gpt-5.6 reads at 0.1, writes at 1.25).
type measuredCase struct {
	format, path, model string
	usage               fakeupstream.Usage
	bill                float64
	body                func(stream bool) string
}

var measuredCases = []measuredCase{
	{"chat", "/v1/chat/completions", "gpt-4o", fakeupstream.Usage{Prompt: 5000, CacheRead: 3000, CacheWrite: 1000},
		0.5*3000 + 1*1000 + 1000, func(stream bool) string {
			return `{"model":"gpt-4o","stream":` + strconv.FormatBool(stream) + `,"stream_options":{"include_usage":true},` +
				`"messages":[{"role":"user","content":"What does the build script do?"}]}`
		}},
	{"messages", "/v1/messages", "claude-sonnet-4-5", fakeupstream.Usage{Prompt: 6000, CacheRead: 4000, CacheWrite: 1500, CacheWrite1h: 500},
		0.1*4000 + 1.25*1000 + 2*500 + 500, func(stream bool) string {
			return `{"model":"claude-sonnet-4-5","max_tokens":1024,"stream":` + strconv.FormatBool(stream) +
				`,"messages":[{"role":"user","content":"What does the build script do?"}]}`
		}},
	{"responses", "/v1/responses", "gpt-5.6", fakeupstream.Usage{Prompt: 7000, CacheRead: 5000, CacheWrite: 1000},
		0.1*5000 + 1.25*1000 + 1000, func(stream bool) string {
			return `{"model":"gpt-5.6","stream":` + strconv.FormatBool(stream) +
				`,"input":[{"role":"user","content":"What does the build script do?"}]}`
		}},
}

// TestMeasuredUsage: through the stack serve builds, in front of fakes
// that report usage as each provider does — Anthropic's message_start and
// message_delta usage (and its JSON answer's), chat's usage in the JSON
// answer and in a stream's last chunk (stream_options.include_usage),
// Responses' in the response and in response.completed — each request's
// log line, /metrics and the live page show the cache reads and writes
// measured, the input bill at the model's prices and the estimate's
// error. The agents accept gzip, and the upstream compresses when asked:
// the answers are read all the same (the proxy asks for them unencoded;
// its transport undoes its own compression). A 502 adds nothing; an
// answer without usage says "not reported".
func TestMeasuredUsage(t *testing.T) {
	usageOf := map[string]fakeupstream.Usage{}
	for _, c := range measuredCases {
		usageOf[c.format] = c.usage
	}
	chat := fakeupstream.New()
	chat.Usage = func([]byte) fakeupstream.Usage { return usageOf["chat"] }
	msgs := &fakeupstream.Messages{Delay: -1, Usage: func([]byte) fakeupstream.Usage { return usageOf["messages"] }}
	resp := &fakeupstream.Responses{Delay: -1, Usage: func([]byte) fakeupstream.Usage { return usageOf["responses"] }}
	fakes := fakeupstream.Mux(chat, msgs, resp)
	upstream := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Test-Fail") != "" {
			io.Copy(io.Discard, r.Body)
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadGateway)
			io.WriteString(w, `{"error":{"message":"bad gateway","type":"server_error"}}`)
			return
		}
		if !strings.Contains(r.Header.Get("Accept-Encoding"), "gzip") {
			fakes.ServeHTTP(w, r)
			return
		}
		// Compressed, as the providers compress JSON answers for a
		// client that accepts it.
		rec := httptest.NewRecorder()
		fakes.ServeHTTP(rec, r)
		for k, v := range rec.Header() {
			w.Header()[k] = v
		}
		w.Header().Set("Content-Encoding", "gzip")
		w.WriteHeader(rec.Code)
		zw := gzip.NewWriter(w)
		zw.Write(rec.Body.Bytes())
		zw.Close()
	})
	cfg := config.Defaults()
	cfg.ScopeSecret = "the team's scope secret"
	logs := &lockedBuffer{}
	a := newApp(t, &cfg, upstream, app.Options{Logger: slog.New(slog.NewJSONHandler(logs, nil))})
	srv := httptest.NewServer(a.Handler)
	t.Cleanup(srv.Close)

	// Each request its own caller: its own conversation on the page.
	sent := 0
	send := func(c measuredCase, stream bool, key string, header ...string) (*http.Response, string) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, srv.URL+c.path, strings.NewReader(c.body(stream)))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("Accept-Encoding", "gzip") // as the agents' clients ask
		req.Header.Set("X-Test-Key", key)
		for i := 0; i+1 < len(header); i += 2 {
			req.Header.Set(header[i], header[i+1])
		}
		res, err := http.DefaultTransport.RoundTrip(req) // the answer as sent, not decoded
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		sent++
		// Recorded: its log line is written (before the record), so the
		// lines are in the order the requests were sent.
		waitRecorded(t, srv.URL, http.Header{}, sent)
		return res, string(b)
	}
	want := struct{ read, write, write1h, uncached, bill float64 }{}
	tokensAfter := map[string]int{}
	for _, c := range measuredCases {
		for _, stream := range []bool{false, true} {
			key := "sk-" + c.format + "-" + strconv.FormatBool(stream)
			res, body := send(c, stream, key)
			if res.StatusCode != http.StatusOK {
				t.Fatalf("%s: status %d: %s", key, res.StatusCode, body)
			}
			if stream && !strings.Contains(body, "data:") || !stream && !json.Valid([]byte(body)) {
				t.Fatalf("%s: the agent's answer is not one of its kind (%s): %.200s", key, res.Header.Get("Content-Encoding"), body)
			}
			tokensAfter[key], _ = strconv.Atoi(res.Header.Get(proxy.HeaderTokensAfter))
			u := c.usage
			want.read += float64(u.CacheRead)
			want.write += float64(u.CacheWrite - u.CacheWrite1h)
			want.write1h += float64(u.CacheWrite1h)
			want.uncached += float64(u.Prompt - u.CacheRead - u.CacheWrite)
			want.bill += c.bill
		}
	}
	before := measuredMetrics(t, srv.URL)
	for kind, v := range map[string]float64{"cache_read": want.read, "cache_write": want.write, "cache_write_1h": want.write1h,
		"uncached": want.uncached, "bill": want.bill, "reported": 6} {
		if math.Abs(before[kind]-v) > 1e-6 {
			t.Errorf("/metrics %s: %v, want %v", kind, before[kind], v)
		}
	}

	// Each log line.
	lines := jsonLines(t, logs.String())
	if len(lines) != 6 {
		t.Fatalf("%d log lines of requests, want 6", len(lines))
	}
	for i, c := range measuredCases {
		u := c.usage
		for j, stream := range []bool{false, true} {
			key := "sk-" + c.format + "-" + strconv.FormatBool(stream)
			l := lines[2*i+j]
			if l["path"] != c.path {
				t.Fatalf("%s: log line of %v", key, l["path"])
			}
			wantEst := math.Round((float64(tokensAfter[key])/float64(u.Prompt)-1)*1000) / 1000
			for field, v := range map[string]float64{"measured_input": float64(u.Prompt), "measured_cache_read": float64(u.CacheRead),
				"measured_cache_write": float64(u.CacheWrite), "measured_bill": math.Round(c.bill*10) / 10, "estimate_error": wantEst} {
				if got, ok := l[field].(float64); !ok || math.Abs(got-v) > 1e-9 {
					t.Errorf("%s log line: %s=%v, want %v", key, field, l[field], v)
				}
			}
			if out, _ := l["measured_output"].(float64); out <= 0 {
				t.Errorf("%s log line: measured_output=%v", key, l["measured_output"])
			}
			if w1h, _ := l["measured_cache_write_1h"].(float64); int(w1h) != u.CacheWrite1h {
				t.Errorf("%s log line: measured_cache_write_1h=%v, want %d", key, l["measured_cache_write_1h"], u.CacheWrite1h)
			}
		}
	}

	// The page: the overview's sums, each conversation's and each
	// request's measured usage beside the estimate.
	var ov struct {
		Measured struct {
			Requests      int      `json:"requests"`
			NotReported   int      `json:"not_reported"`
			Input         float64  `json:"input"`
			CacheRead     float64  `json:"cache_read"`
			CacheWrite    float64  `json:"cache_write"`
			CacheWrite1h  float64  `json:"cache_write_1h"`
			Bill          float64  `json:"bill"`
			BillUSD       *float64 `json:"bill_usd"`
			EstimateError *float64 `json:"estimate_error"`
		} `json:"measured"`
	}
	getJSON(t, srv.URL+"/ui/api/overview", &ov)
	m := ov.Measured
	if m.Requests != 6 || m.NotReported != 0 || m.CacheRead != want.read || m.CacheWrite != want.write+want.write1h ||
		m.CacheWrite1h != want.write1h || m.Input != want.read+want.write+want.write1h+want.uncached ||
		math.Abs(m.Bill-want.bill) > 1e-6 || m.BillUSD == nil || m.EstimateError == nil {
		t.Errorf("page overview measured: %+v, want 6 requests, reads %v, writes %v (1h %v), bill %v, in dollars, with the estimate's error",
			m, want.read, want.write+want.write1h, want.write1h, want.bill)
	}
	var list struct {
		Conversations []struct {
			ID       string `json:"id"`
			Model    string `json:"model"`
			Format   string `json:"format"`
			Measured struct {
				Requests  int     `json:"requests"`
				CacheRead float64 `json:"cache_read"`
				Bill      float64 `json:"bill"`
			} `json:"measured"`
		} `json:"conversations"`
	}
	getJSON(t, srv.URL+"/ui/api/conversations", &list)
	if len(list.Conversations) != 6 {
		t.Fatalf("%d conversations on the page, want 6", len(list.Conversations))
	}
	for _, conv := range list.Conversations {
		var c measuredCase
		for _, mc := range measuredCases {
			if mc.format == conv.Format {
				c = mc
			}
		}
		if conv.Measured.Requests != 1 || conv.Measured.CacheRead != float64(c.usage.CacheRead) || math.Abs(conv.Measured.Bill-c.bill) > 1e-6 {
			t.Errorf("page, %s conversation: measured %+v, want 1 request, reads %d, bill %v", conv.Format, conv.Measured, c.usage.CacheRead, c.bill)
		}
		var detail struct {
			Requests []struct {
				CacheRead int `json:"cache_read"` // the estimate's
				Measured  *struct {
					Reported   bool `json:"reported"`
					CacheRead  int  `json:"cache_read"`
					CacheWrite int  `json:"cache_write"`
					Input      int  `json:"input"`
				} `json:"measured"`
			} `json:"requests"`
		}
		getJSON(t, srv.URL+"/ui/api/conversations/"+conv.ID, &detail)
		if len(detail.Requests) != 1 || detail.Requests[0].Measured == nil || !detail.Requests[0].Measured.Reported ||
			detail.Requests[0].Measured.CacheRead != c.usage.CacheRead || detail.Requests[0].Measured.CacheWrite != c.usage.CacheWrite ||
			detail.Requests[0].Measured.Input != c.usage.Prompt {
			t.Errorf("page, %s request: %+v, want its measured usage %+v", conv.Format, detail.Requests, c.usage)
		}
	}

	// A 502 adds nothing: not to /metrics, the page or the log line.
	for _, c := range measuredCases {
		for _, stream := range []bool{false, true} {
			if res, _ := send(c, stream, "sk-failing", "X-Test-Fail", "1"); res.StatusCode != http.StatusBadGateway {
				t.Fatalf("status %d, want the upstream's 502", res.StatusCode)
			}
		}
	}
	if after := measuredMetrics(t, srv.URL); !equalMaps(after, before) {
		t.Errorf("502s changed the measured metrics: %v, was %v", after, before)
	}
	getJSON(t, srv.URL+"/ui/api/overview", &ov)
	if ov.Measured.Requests != 6 || ov.Measured.NotReported != 0 || ov.Measured.CacheRead != want.read {
		t.Errorf("502s changed the page's measured usage: %+v", ov.Measured)
	}
	for _, l := range lines502(t, logs.String()) {
		for k := range l {
			if strings.HasPrefix(k, "measured") || k == "estimate_error" {
				t.Errorf("a 502's log line has %s=%v", k, l[k])
			}
		}
	}

	// An answer without usage: a stream not asked to include it.
	c := measuredCases[0]
	c.body = func(bool) string {
		return `{"model":"gpt-4o","stream":true,"messages":[{"role":"user","content":"And the tests?"}]}`
	}
	if res, _ := send(c, true, "sk-no-usage"); res.StatusCode != http.StatusOK {
		t.Fatalf("status %d", res.StatusCode)
	}
	if got := measuredMetrics(t, srv.URL); got["not_reported"] != 1 || got["reported"] != 6 || got["bill"] != before["bill"] {
		t.Errorf("/metrics after an answer without usage: %v", got)
	}
	getJSON(t, srv.URL+"/ui/api/overview", &ov)
	if ov.Measured.Requests != 6 || ov.Measured.NotReported != 1 {
		t.Errorf("page after an answer without usage: %+v, want 6 measured, 1 not reported", ov.Measured)
	}
	if !regexp.MustCompile(`"measured":"not reported"`).MatchString(logs.String()) {
		t.Error(`no log line says measured="not reported"`)
	}
}

// measuredMetrics sums /metrics' measured series: the input tokens by
// kind, the bill, and the requests by whether usage was reported.
func measuredMetrics(t *testing.T, base string) map[string]float64 {
	t.Helper()
	res, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	out := map[string]float64{}
	sc := bufio.NewScanner(res.Body)
	series := regexp.MustCompile(`^(condense_input_tokens_measured_total|condense_bill_measured_total|condense_measured_requests_total)\{([^}]*)\} (\S+)$`)
	for sc.Scan() {
		m := series.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		v, _ := strconv.ParseFloat(m[3], 64)
		key := "bill"
		if l := regexp.MustCompile(`(?:kind|usage)="([^"]+)"`).FindStringSubmatch(m[2]); l != nil {
			key = l[1]
		}
		out[key] += v
	}
	return out
}

func lines502(t *testing.T, logs string) []map[string]any {
	var out []map[string]any
	for _, l := range jsonLines(t, logs) {
		if l["status"] == float64(http.StatusBadGateway) {
			out = append(out, l)
		}
	}
	if len(out) != 6 {
		t.Errorf("%d log lines of 502s, want 6", len(out))
	}
	return out
}

func jsonLines(t *testing.T, logs string) []map[string]any {
	var out []map[string]any
	for _, line := range strings.Split(logs, "\n") {
		var l map[string]any
		if json.Unmarshal([]byte(line), &l) == nil && l["msg"] == "request" {
			out = append(out, l)
		}
	}
	return out
}

func getJSON(t *testing.T, url string, v any) {
	t.Helper()
	res, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v: %s", url, err, bytes.TrimSpace(b))
	}
}

func equalMaps(a, b map[string]float64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}
