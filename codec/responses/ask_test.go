package responses

import (
	"regexp"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/condense-proxy/condense-proxy/internal/fakeupstream"
	"github.com/condense-proxy/condense-proxy/tokenizer"
)

// TestAsk: a summary asked in place is a valid Responses request (the
// strict fake's rules: reasoning items with their encrypted content, call
// pairing) whose input items are the conversation's byte for byte, then
// the instruction as a user message; not streamed, max_output_tokens the
// summary's plus room for reasoning; every other field as it was. A
// request that continues a stored response is not asked so.
func TestAsk(t *testing.T) {
	c := New(tokenizer.New(tokenizer.Options{}))
	// The strict fake verifies encrypted content it issued: the
	// session's reasoning carries the fake's.
	b := regexp.MustCompile(`"encrypted_content":"[^"]*"`).ReplaceAll(codexBody(codexSession(3, 12)),
		[]byte(`"encrypted_content":"`+fakeupstream.DefaultSigner.Encrypt("reasoning")+`"`))
	r, err := c.Scan(b, func(string) string { return "o200k_base" })
	if err != nil {
		t.Fatal(err)
	}
	out, ok, err := c.Ask(r, "You are the condense-proxy summarizer. Summarize messages 1 to 4.", 1500)
	if err != nil || !ok {
		t.Fatalf("ok %v, err %v", ok, err)
	}
	if e := fakeupstream.ValidateResponses(out, fakeupstream.DefaultSigner); e != nil {
		t.Fatalf("the strict fake refuses it: %v", e.Message)
	}
	was, now := gjson.GetBytes(b, "input").Array(), gjson.GetBytes(out, "input").Array()
	if len(now) != len(was)+1 {
		t.Fatalf("%d items, want %d", len(now), len(was)+1)
	}
	for i := range was {
		if was[i].Raw != now[i].Raw {
			t.Fatalf("item %d changed", i)
		}
	}
	if n := now[len(now)-1]; n.Get("role").Str != "user" || !strings.Contains(n.Get("content.0.text").Str, "condense-proxy summarizer") {
		t.Errorf("last item %s", n.Raw)
	}
	if gjson.GetBytes(out, "stream").Bool() || gjson.GetBytes(out, "max_output_tokens").Int() != 1500+8192 {
		t.Errorf("stream %s, max_output_tokens %s", gjson.GetBytes(out, "stream").Raw, gjson.GetBytes(out, "max_output_tokens").Raw)
	}
	for _, k := range []string{"tools", "reasoning", "include", "prompt_cache_key", "store", "x_unknown"} {
		if gjson.GetBytes(out, k).Raw != gjson.GetBytes(b, k).Raw {
			t.Errorf("%s changed", k)
		}
	}
	stored := []byte(strings.Replace(string(b), `"store":false`, `"store":true,"previous_response_id":"resp_1"`, 1))
	if r, err = c.Scan(stored, func(string) string { return "o200k_base" }); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := c.Ask(r, "summarize", 100); ok || err != nil {
		t.Errorf("a request that continues a stored response: ok %v, err %v", ok, err)
	}
}
