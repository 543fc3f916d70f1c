package chat

import (
	"errors"
	"math/rand"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/condense-proxy/condense-proxy/jsonscan"
	"github.com/condense-proxy/condense-proxy/tokenizer"
	"github.com/condense-proxy/condense-proxy/view"
)

// countBody scans body with the chat codec, counting with encoding.
func countBody(c *Codec, encoding string, body []byte) (*view.Request, error) {
	return c.Scan(body, func(string) string { return encoding })
}

func TestRequestCount(t *testing.T) {
	counter := tokenizer.New(tokenizer.Options{})
	c := New(counter)
	hello := counter.Text(tokenizer.O200kBase, "hello world")
	user := counter.Text(tokenizer.O200kBase, "user")
	tests := []struct {
		name string
		body string
		want int
	}{
		{"one message", `{"model":"gpt-4o","messages":[{"role":"user","content":"hello world"}]}`, 3 + user + hello + 3},
		{"name adds one", `{"messages":[{"role":"user","name":"bob","content":"hello world"}]}`, 3 + user + hello + counter.Text(tokenizer.O200kBase, "bob") + 1 + 3},
		{"text parts", `{"messages":[{"role":"user","content":[{"type":"text","text":"hello world"}]}]}`, 3 + user + hello + 3},
		{"image low", `{"messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:x","detail":"low"}}]}]}`, 3 + user + 85 + 3},
		{"image high", `{"messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"https://x/y.png"}}]}]}`, 3 + user + 765 + 3},
		{"null content", `{"messages":[{"role":"user","content":null}]}`, 3 + user + 3},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, err := countBody(c, tokenizer.O200kBase, []byte(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			if r.Total != tc.want {
				t.Errorf("Total = %d, want %d", r.Total, tc.want)
			}
		})
	}
}

func TestRequestCountsToolsAndCalls(t *testing.T) {
	counter := tokenizer.New(tokenizer.Options{})
	c := New(counter)
	plain := `{"messages":[{"role":"user","content":"list files"}]}`
	withTools := `{"messages":[{"role":"user","content":"list files"}],"tools":[{"type":"function","function":{"name":"bash","description":"run a shell command","parameters":{"type":"object","properties":{"command":{"type":"string"}}}}}]}`
	withFunctions := `{"messages":[{"role":"user","content":"list files"}],"functions":[{"name":"bash","description":"run a shell command","parameters":{"type":"object","properties":{"command":{"type":"string"}}}}]}`
	withBoth := `{"messages":[{"role":"user","content":"list files"}],"tools":[{"type":"function","function":{"name":"bash","description":"run a shell command","parameters":{"type":"object","properties":{"command":{"type":"string"}}}}}],"functions":[{"name":"bash","description":"run a shell command","parameters":{"type":"object","properties":{"command":{"type":"string"}}}}]}`
	withCall := `{"messages":[{"role":"user","content":"list files"},{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"bash","arguments":"{\"command\":\"ls -la /very/long/path\"}"}}]},{"role":"tool","tool_call_id":"c1","content":"a.go\nb.go"}]}`
	p, _ := countBody(c, tokenizer.O200kBase, []byte(plain))
	tl, _ := countBody(c, tokenizer.O200kBase, []byte(withTools))
	fn, _ := countBody(c, tokenizer.O200kBase, []byte(withFunctions))
	both, _ := countBody(c, tokenizer.O200kBase, []byte(withBoth))
	cl, _ := countBody(c, tokenizer.O200kBase, []byte(withCall))
	if tools := tl.Total - p.Total; tools <= 10 {
		t.Errorf("tools counted %d, totals %d vs %d", tools, tl.Total, p.Total)
	}
	// A function counts as a tool; the namespace around them once.
	if tools, functions := tl.Total-p.Total, fn.Total-p.Total; functions != tools || both.Total-p.Total != 2*tools-toolsOverhead {
		t.Errorf("tools %d, functions %d, both %d", tools, functions, both.Total-p.Total)
	}
	if len(cl.Items) != 3 || cl.Items[1].Tokens < counter.Text(tokenizer.O200kBase, `{"command":"ls -la /very/long/path"}`) {
		t.Errorf("tool call arguments not counted: %v", cl.Items)
	}
}

func TestRequestNotChat(t *testing.T) {
	c := New(tokenizer.New(tokenizer.Options{}))
	for _, body := range []string{``, `not json`, `[]`, `{"model":"x"}`, `{"messages":"hi"}`, `{"messages":[1,2`, `{"mess\u0061ges":[]}`} {
		if _, err := countBody(c, tokenizer.O200kBase, []byte(body)); !errors.Is(err, view.ErrNotRequest) {
			t.Errorf("Scan(%q) err = %v, want view.ErrNotRequest", body, err)
		}
	}
}

func TestRequestTooManyMessages(t *testing.T) {
	c := New(tokenizer.New(tokenizer.Options{MaxMessages: 1}))
	_, err := countBody(c, tokenizer.O200kBase, []byte(`{"messages":[{"role":"user","content":"a"},{"role":"user","content":"b"}]}`))
	if !errors.Is(err, view.ErrTooManyItems) {
		t.Errorf("err = %v, want view.ErrTooManyItems", err)
	}
}

func TestMessageCacheHits(t *testing.T) {
	c := New(tokenizer.New(tokenizer.Options{}))
	body := []byte(`{"messages":[{"role":"system","content":"be brief"},{"role":"user","content":"hello"}]}`)
	first, _ := countBody(c, tokenizer.O200kBase, body)
	second, _ := countBody(c, tokenizer.O200kBase, body)
	if first.CacheHits != 0 || second.CacheHits != 2 {
		t.Errorf("cache hits %d then %d, want 0 then 2", first.CacheHits, second.CacheHits)
	}
	if first.Total != second.Total {
		t.Errorf("cached total %d differs from %d", second.Total, first.Total)
	}
	// Another encoding must not reuse the o200k counts.
	third, _ := countBody(c, tokenizer.CL100kBase, body)
	if third.CacheHits != 0 {
		t.Errorf("cl100k reused o200k cache entries")
	}
}

// FuzzRequest: counting any bytes never panics, and a body is either not a
// chat request or has a positive count per message.
func FuzzRequest(f *testing.F) {
	f.Add([]byte(`{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function","function":{"name":"f"}}]}`))
	f.Add([]byte(`{"messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"x"}}]}]}`))
	f.Add([]byte(`{"messages":[1,"x",null,{"content":{"a":[1,2]}}]}`))
	c := New(tokenizer.New(tokenizer.Options{}))
	f.Fuzz(func(t *testing.T, body []byte) {
		r, err := countBody(c, tokenizer.O200kBase, body)
		if err != nil {
			return
		}
		if sc := r.Private.(*scan); len(sc.fields) != len(messageKeys)*len(r.Items) {
			t.Fatal("spans and counts disagree")
		}
		for i, it := range r.Items {
			if it.Tokens < tokensPerMessage {
				t.Fatalf("message %d counted %d", i, it.Tokens)
			}
			if it.Start < 0 || it.End > len(body) || it.Start >= it.End {
				t.Fatalf("bad span %d-%d", it.Start, it.End)
			}
		}
	})
}

// TestRoleCountsAreTheTexts: a role's count read from the kept counts is
// its text's, whichever encoding was counted before.
func TestRoleCountsAreTheTexts(t *testing.T) {
	c := tokenizer.New(tokenizer.Options{})
	for _, enc := range []string{tokenizer.O200kBase, tokenizer.CL100kBase, "no-such-encoding", tokenizer.O200kBase} {
		for _, raw := range []string{`"user"`, `"assistant"`, `"system"`, `"tool"`, `"developer"`, `"function"`, `"Assistant"`, `""`, `null`, `7`} {
			v := gjson.Parse(raw)
			if got, want := countRole(c, enc, v), countValue(c, enc, v); got != want {
				t.Errorf("%s: role %s counted %d, its text %d", enc, raw, got, want)
			}
		}
	}
}

// TestCountKnownIsCountMessage: a message whose fields are all of
// messageKeys, each written once, counts from its spans what
// countMessage counts — roles, contents of every shape, tool calls — and
// the other messages are not taken for such.
func TestCountKnownIsCountMessage(t *testing.T) {
	fields := []string{`"role":"user"`, `"role":"assistant"`, `"role":"tool"`, `"role":7`, `"content":"ping 1"`, `"content":null`, `"content":"a\"b"`,
		`"content":[{"type":"text","text":"hi"},{"type":"image_url","image_url":{"url":"x","detail":"low"}}]`, `"content":{"x":1}`,
		`"tool_call_id":"call_1"`, `"tool_calls":[{"id":"c","type":"function","function":{"name":"bash","arguments":"{\"command\":\"ls\"}"}}]`,
		`"tool_calls":"odd"`, `"name":"n"`, `"other":[1,2]`, `"r\u006fle":"user"`}
	c := tokenizer.New(tokenizer.Options{})
	rng := rand.New(rand.NewSource(37))
	knownSeen := 0
	for i := 0; i < 20000; i++ {
		var b strings.Builder
		b.WriteByte('{')
		for f, n := 0, rng.Intn(5); f < n; f++ {
			if f > 0 {
				b.WriteByte(',')
			}
			b.WriteString(fields[rng.Intn(len(fields))])
		}
		b.WriteByte('}')
		raw := b.String()
		f := make([][2]int, len(messageKeys))
		n, twice, isObject := jsonscan.ObjectFieldsValid(raw, messageKeys, f)
		if !isObject || twice || n != present(f) {
			continue
		}
		knownSeen++
		for _, enc := range []string{tokenizer.O200kBase, tokenizer.CL100kBase} {
			if got, want := countKnown(c, enc, raw, f), countMessage(c, enc, gjson.Parse(raw)); got != want {
				t.Fatalf("%s: %s counted %d from its spans, %d by countMessage", raw, enc, got, want)
			}
		}
	}
	if knownSeen < 1000 {
		t.Fatalf("only %d messages of known fields generated", knownSeen)
	}
}
