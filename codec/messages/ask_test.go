package messages

import (
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/condense-proxy/condense-proxy/internal/fakeupstream"
)

// TestAsk: a summary asked in place is a valid Messages request (the
// strict fake's rules: thinking, pairing, cache markers) whose messages
// before the last are the conversation's byte for byte, the instruction a
// block after the last user message's, not streamed, bounded by the
// summary's tokens plus the thinking budget; a request that forces a tool
// call is not asked so.
func TestAsk(t *testing.T) {
	c := New(sharedCounter)
	for _, thinking := range []bool{true, false} {
		b := body(claudeSession(5, 21, thinking), "claude-sonnet-4-5", thinking)
		r, err := c.Scan(b, func(string) string { return "o200k_base" })
		if err != nil {
			t.Fatal(err)
		}
		out, ok, err := c.Ask(r, "You are the condense-proxy summarizer. Summarize messages 1 to 4.", 1500)
		if err != nil || !ok {
			t.Fatalf("thinking=%v: ok %v, err %v", thinking, ok, err)
		}
		if e := fakeupstream.ValidateMessages(out, fakeupstream.DefaultSigner, false); e != nil {
			t.Fatalf("thinking=%v: the strict fake refuses it: %v", thinking, e.Message)
		}
		was, now := gjson.GetBytes(b, "messages").Array(), gjson.GetBytes(out, "messages").Array()
		if len(now) != len(was) {
			t.Fatalf("thinking=%v: %d messages, want %d (the text joins the last user message)", thinking, len(now), len(was))
		}
		for i := 0; i < len(was)-1; i++ {
			if was[i].Raw != now[i].Raw {
				t.Fatalf("thinking=%v: message %d changed", thinking, i)
			}
		}
		last := now[len(now)-1].Get("content").Array()
		if !strings.Contains(last[len(last)-1].Get("text").Str, "condense-proxy summarizer") {
			t.Errorf("thinking=%v: the instruction is not the last block", thinking)
		}
		want := int64(1500)
		if thinking {
			want += 16000
		}
		if gjson.GetBytes(out, "stream").Bool() || gjson.GetBytes(out, "max_tokens").Int() != want {
			t.Errorf("thinking=%v: stream %s, max_tokens %s (want %d)", thinking, gjson.GetBytes(out, "stream").Raw, gjson.GetBytes(out, "max_tokens").Raw, want)
		}
		for _, k := range []string{"system", "tools", "thinking", "metadata", "context_management"} {
			if gjson.GetBytes(out, k).Raw != gjson.GetBytes(b, k).Raw {
				t.Errorf("thinking=%v: %s changed", thinking, k)
			}
		}
	}
	forced := []byte(strings.Replace(string(body(claudeSession(5, 21, false), "claude-sonnet-4-5", false)), `"stream":true`, `"stream":true,"tool_choice":{"type":"any"}`, 1))
	r, err := c.Scan(forced, func(string) string { return "o200k_base" })
	if err != nil {
		t.Fatal(err)
	}
	if _, ok, err := c.Ask(r, "summarize", 100); ok || err != nil {
		t.Errorf("a request that forces a tool call: ok %v, err %v", ok, err)
	}
}
