package proxy

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/condense-proxy/condense-proxy/condense"
	"github.com/condense-proxy/condense-proxy/internal/fakeupstream"
	"github.com/condense-proxy/condense-proxy/tokenizer"
)

// fuzzSeeds are raw chat bodies: duplicate keys, escaped keys, odd shapes,
// broken JSON, and conversations large enough to condense at the fuzzed
// proxy's window.
func fuzzSeeds() []string {
	long := strings.Repeat("output line with some words\n", 300)
	q := func(s string) string { b, _ := json.Marshal(s); return string(b) }
	conv := `[{"role":"system","content":"s"},{"role":"user","content":"task"},` +
		`{"role":"assistant","content":null,"tool_calls":[{"id":"a","type":"function","function":{"name":"bash","arguments":"{\"command\":\"ls\"}"}}]},` +
		`{"role":"tool","tool_call_id":"a","content":` + q(long) + `},` +
		`{"role":"assistant","content":"` + strings.Repeat("thinking aloud ", 150) + `"},` +
		`{"role":"user","content":[{"type":"text","text":` + q(long) + `}]},` +
		`{"role":"assistant","content":"ok"},{"role":"user","content":"next"}]`
	return []string{
		chatBody,
		`{"model":"gpt-4o","messages":[{"role":"tool","tool_call_id":"x","content":"y"}]}`,
		`{"model":"m","messages":` + conv + `}`,
		`{"model":"m","messages":[],"messages":` + conv + `}`,
		`{"model":"m","messages":` + conv + `,"messages":[{"role":"user","content":"x"}]}`,
		`{"model":"m","mess\u0061ges":` + conv + `}`,
		`{"model":"m","messages":` + conv + `,"model":"n","tools":[{"type":"function","function":{"name":"bash"}}],"x":{"y":[1,2e3,-0.5,null,true]}}`,
		`{"model":"m","messages":{"role":"user"}}`,
		`{"model":"m","messages":[1,"x",null,[],{}]}`,
		`{"model":7,"messages":[{"role":"user","content":{"nested":{"deep":[[[[]]]]}}}]}`,
		`{"messages":` + conv[:len(conv)/2],
		`[{"messages":` + conv + `}]`,
		"\xef\xbb\xbf{\"messages\":[{\"role\":\"user\",\"content\":\"bom\"}]}",
		"\xff\xfe{}",
		` {"messages" : [ {"role" : "user" , "content" : "\ud83d\ude00 \u0000"} ] } `,
	}
}

func gzipped(s string) []byte {
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	zw.Write([]byte(s))
	zw.Close()
	return b.Bytes()
}

// FuzzChatRequest sends arbitrary bytes, under arbitrary encodings and
// modes (forced or not), to the chat endpoint of a proxy with a small
// window: the proxy never panics; a refused body (413) reaches nobody;
// what reaches the upstream is the body as received, or as decoded, or a
// condensed body — then valid JSON with fewer tokens, every other
// top-level field as a JSON decoder reads it (last key wins), a valid
// conversation where a valid one came in — and never the proxy's own
// X-Condense-* headers.
func FuzzChatRequest(f *testing.F) {
	for _, s := range fuzzSeeds() {
		f.Add([]byte(s), "", uint8(0))
		f.Add([]byte(s), "", uint8(9)) // full, forced
		f.Add([]byte(s), "", uint8(11))
		f.Add(gzipped(s), "gzip", uint8(10))
	}
	f.Add([]byte("\x1f\x8b\x08\x00garbage"), "gzip", uint8(0))
	f.Add([]byte(`{"messages":[`), "deflate", uint8(1))
	f.Add([]byte(`not json`), "br", uint8(2))
	fake := fakeupstream.New()
	up := httptest.NewServer(fake)
	defer up.Close()
	u, _ := url.Parse(up.URL)
	counter := tokenizer.New(tokenizer.Options{})
	engine := condense.New(condense.Deps{Counter: counter, Models: condense.ModelsFunc(func(string) condense.ModelLimits {
		return condense.ModelLimits{Window: 2000, Threshold: 0.8, Encoding: tokenizer.O200kBase, SafetyFactor: 1}
	})}, condense.Options{Summarizer: "extractive", ChunkTokens: 200, SummaryBudgetTokens: 300, SelectiveEnabled: true, KeepRecentTurns: 1})
	h := New(Options{Upstream: u, Condenser: engine, MaxBodyBytes: 1 << 20, MaxDecompressedBytes: 1 << 20,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	modes := condense.Modes
	f.Fuzz(func(t *testing.T, body []byte, encoding string, mode uint8) {
		for _, b := range []byte(encoding) {
			if b < 0x20 || b > 0x7e {
				return // not a valid header value; net/http would refuse it
			}
		}
		fake.Reset()
		req := httptest.NewRequest(http.MethodPost, "/v1/chat/completions", bytes.NewReader(body))
		if encoding != "" {
			req.Header.Set("Content-Encoding", encoding)
		}
		req.Header.Set(HeaderMode, modes[int(mode)%len(modes)])
		if mode&8 != 0 {
			req.Header.Set(HeaderForce, "true")
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code == http.StatusInternalServerError {
			t.Fatalf("500: %s", rec.Body)
		}
		got := fake.Received()
		if rec.Code == http.StatusRequestEntityTooLarge {
			if len(got) != 0 {
				t.Fatal("oversized body forwarded")
			}
			return
		}
		if len(got) != 1 {
			t.Fatalf("upstream got %d requests (status %d)", len(got), rec.Code)
		}
		for k := range got[0].Header {
			if strings.HasPrefix(strings.ToLower(k), "x-condense-") {
				t.Fatalf("%s forwarded", k)
			}
		}
		fwd := got[0].Body
		if bytes.Equal(fwd, body) {
			return
		}
		dec, decoded, err := decodeBody(body, encoding, 1<<20, unlimited())
		if err != nil {
			t.Fatalf("an undecodable body was changed")
		}
		if decoded && bytes.Equal(fwd, dec) {
			return
		}
		// Condensed.
		if a := rec.Header().Get(HeaderApplied); a == "" || a == condense.AppliedNone {
			t.Fatalf("body changed, X-Condense-Applied %q", a)
		}
		before, _ := strconv.Atoi(rec.Header().Get(HeaderTokensBefore))
		after, _ := strconv.Atoi(rec.Header().Get(HeaderTokensAfter))
		if after >= before {
			t.Fatalf("condensed to %d tokens from %d", after, before)
		}
		var in, out map[string]json.RawMessage
		if err := json.Unmarshal(dec, &in); err != nil {
			t.Fatalf("condensed though the body does not decode as an object: %v", err)
		}
		if err := json.Unmarshal(fwd, &out); err != nil {
			t.Fatalf("forwarded body is not a JSON object: %v", err)
		}
		for k, v := range in {
			if k != "messages" && !bytes.Equal(out[k], v) {
				t.Fatalf("field %q changed: %s -> %s", k, v, out[k])
			}
		}
		var inMsgs, outMsgs []json.RawMessage
		if json.Unmarshal(in["messages"], &inMsgs) != nil {
			t.Fatal("condensed though the decoded messages are not an array")
		}
		if err := json.Unmarshal(out["messages"], &outMsgs); err != nil {
			t.Fatalf("forwarded messages: %v", err)
		}
		if fakeupstream.Validate(inMsgs) == nil {
			if err := fakeupstream.Validate(outMsgs); err != nil {
				t.Fatalf("a valid conversation became invalid: %v", err)
			}
		}
	})
}
