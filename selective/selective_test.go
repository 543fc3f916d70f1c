package selective

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/condense-proxy/condense-proxy/codec/chat"
	"github.com/condense-proxy/condense-proxy/tokenizer"
	"github.com/condense-proxy/condense-proxy/view"
)

var counter = tokenizer.New(tokenizer.Options{})

var count = counter.Text

// o200k is the encoding the tests' bodies are counted with.
func o200k(string) string { return tokenizer.O200kBase }

// units builds Apply's units of a chat-completions body the way package
// condense does: the chat codec's view, parsed (the roles are read even
// when the API would refuse one), made into Messages.
func units(t testing.TB, body []byte) []Message {
	r, err := chatCodec.Scan(body, o200k)
	if err != nil {
		t.Fatal(err)
	}
	if err := chatCodec.Parse(r); err != nil && !errors.Is(err, view.ErrInvalid) {
		t.Fatal(err)
	}
	return Messages(r)
}

// chatCodec is the codec of the bodies these tests build.
var chatCodec = chat.New(counter)

func bigLog(i int) string {
	var b strings.Builder
	for l := 0; l < 300; l++ {
		fmt.Fprintf(&b, "=== RUN   TestThing%d_%d\n--- PASS: TestThing%d_%d (0.00s)\n", i, l, i, l)
	}
	fmt.Fprintf(&b, "--- FAIL: TestPlanted%d (0.01s)\n    planted_test.go:%d: planted error %d\nFAIL\nexit status 1\n", i, 100+i, i)
	return b.String()
}

// session returns a raw body with n tool outputs, odd formatting, unknown
// fields and a tools list, built by hand so the bytes are known.
func session(n int) []byte {
	var b bytes.Buffer
	b.WriteString(`{"model": "gpt-4o",  "x_unknown": {"keep": true}, "messages": [` + "\n")
	b.WriteString(`  {"role": "system", "content": "You are an agent."},` + "\n")
	b.WriteString(`  {"content": "Fix the tests.", "role": "user"}`)
	for i := 0; i < n; i++ {
		tool := "bash"
		if i%4 == 3 {
			tool = "todo"
		}
		args, _ := json.Marshal(map[string]string{"command": "go test ./..."})
		fmt.Fprintf(&b, ",\n  {\"role\":\"assistant\",\"content\":\"run %d\",\"tool_calls\":[{\"id\":\"c%d\",\"type\":\"function\",\"function\":{\"name\":%q,\"arguments\":%s}}]}", i, i, tool, quote(string(args)))
		content := quote(bigLog(i))
		if i == 1 {
			// A part list with cache_control must never be touched.
			content = []byte(`[{"type":"text","text":` + string(quote(bigLog(i))) + `,"cache_control":{"type":"ephemeral"}}]`)
		}
		if i == 2 {
			content = quote("small output")
		}
		fmt.Fprintf(&b, ",\n  {\"role\":\"tool\", \"tool_call_id\":\"c%d\",  \"content\": %s}", i, content)
	}
	b.WriteString("\n], \"tools\": [{\"type\":\"function\",\"function\":{\"name\":\"bash\",\"parameters\":{}}}], \"stream\": true}")
	return b.Bytes()
}

func TestApplyIsSurgical(t *testing.T) {
	body := session(12)
	msgs := units(t, body)
	c := New(Options{KeepRecentToolOutputs: 3, MinToolOutputTokens: 200, ExcludeTools: []string{"todo"}}, count, nil)
	kept := map[string][]byte{}
	res, err := c.Apply(context.Background(), Request{Codec: chatCodec, Body: body, Messages: msgs, Need: 1 << 30, Scope: "s",
		Keep: func(id string, o func() []byte) { kept[id] = o() }})
	if err != nil {
		t.Fatal(err)
	}
	if !gjson.ValidBytes(res.Body) {
		t.Fatal("patched body is not JSON")
	}
	out := units(t, res.Body)
	if len(out) != len(msgs) {
		t.Fatalf("%d messages, want %d", len(out), len(msgs))
	}
	digested := 0
	for i := range msgs {
		in, o := msgs[i], out[i]
		changed := in.Raw != o.Raw
		idx := (i - 3) / 2 // tool output number for tool messages
		wantChanged := in.Role == "tool" && idx != 1 && idx != 2 && idx%4 != 3 && idx < 12-3
		if changed != wantChanged {
			t.Errorf("message %d (%s, output %d): changed %v, want %v", i, in.Role, idx, changed, wantChanged)
		}
		if changed {
			digested++
			// Only the content changed: the rest of the message is identical.
			ci := gjson.Get(in.Raw, "content")
			co := gjson.Get(o.Raw, "content")
			if in.Raw[:ci.Index] != o.Raw[:co.Index] || in.Raw[ci.Index+len(ci.Raw):] != o.Raw[co.Index+len(co.Raw):] {
				t.Errorf("message %d: bytes outside content changed", i)
			}
			if !strings.HasPrefix(co.Str, "[condense-proxy digest of bash") || !strings.Contains(co.Str, fmt.Sprintf("TestPlanted%d", idx)) {
				t.Errorf("message %d digest lacks marker or planted failing test:\n%.400s", i, co.Str)
			}
			if len(co.Str) >= len(ci.Str) {
				t.Errorf("message %d: digest larger than original", i)
			}
		}
	}
	if digested != res.Digested || digested != len(kept) {
		t.Errorf("digested %d, reported %d, originals kept %d", digested, res.Digested, len(kept))
	}
	// Every byte outside the messages is identical.
	rc0, _ := chatCodec.Scan(body, o200k)
	rc1, _ := chatCodec.Scan(res.Body, o200k)
	if !bytes.Equal(body[:rc0.Items[0].Start], res.Body[:rc1.Items[0].Start]) {
		t.Error("bytes before the messages changed")
	}
	last0, last1 := rc0.Items[len(rc0.Items)-1].End, rc1.Items[len(rc1.Items)-1].End
	if !bytes.Equal(body[last0:], res.Body[last1:]) {
		t.Error("bytes after the messages changed")
	}
	for id, o := range kept {
		if !gjson.ValidBytes(o) || !strings.Contains(string(o), "TestPlanted") {
			t.Errorf("original %s not kept whole", id)
		}
	}
}

// TestApplyCountsWithTheRequestsEncoding: what a digest saves is counted
// with the encoding of the request's model, Request.Encoding.
func TestApplyCountsWithTheRequestsEncoding(t *testing.T) {
	body := session(6)
	var mu sync.Mutex
	seen := map[string]int{}
	c := New(Options{KeepRecentToolOutputs: 1, MinToolOutputTokens: 200}, func(enc, s string) int {
		mu.Lock()
		seen[enc]++
		mu.Unlock()
		return counter.Text(enc, s)
	}, nil)
	res, err := c.Apply(context.Background(), Request{Codec: chatCodec, Body: body, Messages: units(t, body), Need: 1 << 30, Scope: "s",
		Encoding: tokenizer.CL100kBase})
	if err != nil || res.Digested == 0 {
		t.Fatalf("err %v, %d digested", err, res.Digested)
	}
	if len(seen) != 1 || seen[tokenizer.CL100kBase] == 0 {
		t.Errorf("counted with %v, want cl100k_base only", seen)
	}
	for _, m := range res.Made {
		if want := counter.Text(tokenizer.CL100kBase, m.Text); m.After != want {
			t.Errorf("digest %s: %d tokens, %d with cl100k_base", m.ID, m.After, want)
		}
	}
}

func TestApplyOldestFirstAndMinSavings(t *testing.T) {
	body := session(12)
	msgs := units(t, body)
	c := New(Options{KeepRecentToolOutputs: 3, MinToolOutputTokens: 200}, count, nil)
	small, _ := c.Apply(context.Background(), Request{Codec: chatCodec, Body: body, Messages: msgs, Need: 10, Scope: "s"})
	if small.Digested != 1 {
		t.Fatalf("need 10 digested %d outputs, want 1 (the oldest)", small.Digested)
	}
	if gjson.GetBytes(small.Body, "messages.3.content").Str == gjson.GetBytes(body, "messages.3.content").Str {
		t.Error("the oldest output was not the one digested")
	}
	withMin, _ := c.Apply(context.Background(), Request{Codec: chatCodec, Body: body, Messages: msgs, Need: 10, MinSavings: 10000, Scope: "s"})
	if withMin.Digested <= small.Digested || withMin.Saved < 10000 {
		t.Errorf("min savings not honoured: %d digested, %d saved", withMin.Digested, withMin.Saved)
	}
	none, _ := c.Apply(context.Background(), Request{Codec: chatCodec, Body: body, Messages: msgs, Need: 0, Scope: "s"})
	if none.Digested != 0 || &none.Body[0] != &body[0] {
		t.Error("need 0 changed the body")
	}
}

// TestMonotoneAcrossTurns: as the session grows, an output digested on one
// turn is digested identically on the next.
func TestMonotoneAcrossTurns(t *testing.T) {
	c := New(Options{KeepRecentToolOutputs: 2, MinToolOutputTokens: 200}, count, nil)
	var prev []Message
	digested, turnsDigesting := 0, 0
	for n := 6; n <= 14; n++ {
		body := session(n)
		res, _ := c.Apply(context.Background(), Request{Codec: chatCodec, Body: body, Messages: units(t, body), Need: 2000 * n, Scope: "s"})
		out := units(t, res.Body)
		// The property below holds trivially if nothing is digested: the
		// turns must digest, and never fewer outputs than the turn before.
		if res.Digested < digested {
			t.Fatalf("turn %d: %d outputs digested, %d the turn before", n, res.Digested, digested)
		}
		if in := strings.Count(string(res.Body), "condense-proxy digest"); in != res.Digested {
			t.Fatalf("turn %d: %d digests in the body, %d reported", n, in, res.Digested)
		}
		digested = res.Digested
		if res.Digested > 0 {
			turnsDigesting++
		}
		for i := range prev {
			if prev[i].Raw != out[i].Raw && strings.Contains(prev[i].Raw, "condense-proxy digest") {
				t.Fatalf("turn %d: message %d digested differently than before", n, i)
			}
			if strings.Contains(prev[i].Raw, "condense-proxy digest") && !strings.Contains(out[i].Raw, "condense-proxy digest") {
				t.Fatalf("turn %d: message %d no longer digested", n, i)
			}
		}
		prev = out
	}
	t.Logf("%d turns digested, %d outputs at the last", turnsDigesting, digested)
	if turnsDigesting < 6 || digested < 3 {
		t.Fatalf("%d of 9 turns digested anything, %d outputs at the last: the property was hardly tested", turnsDigesting, digested)
	}
}

func TestClearToolInputs(t *testing.T) {
	big := strings.Repeat("package main\n\nfunc main() {}\n", 200)
	args, _ := json.Marshal(map[string]string{"path": "main.go", "content": big})
	body := []byte(`{"messages":[{"role":"user","content":"write it"},` +
		`{"role":"assistant","content":null,"tool_calls":[{"id":"w1","type":"function","function":{"name":"write_file","arguments":` + string(quote(string(args))) + `}}]},` +
		`{"role":"tool","tool_call_id":"w1","content":"ok"},{"role":"assistant","content":"done"},{"role":"user","content":"next"}]}`)
	c := New(Options{MinToolOutputTokens: 100, ClearToolInputs: true}, count, nil)
	res, _ := c.Apply(context.Background(), Request{Codec: chatCodec, Body: body, Messages: units(t, body), Need: 100, Scope: "s"})
	if res.Cleared != 1 {
		t.Fatalf("cleared %d", res.Cleared)
	}
	a := gjson.GetBytes(res.Body, "messages.1.tool_calls.0.function.arguments").Str
	if !gjson.Valid(a) || gjson.Get(a, "path").Str != "main.go" || !strings.Contains(gjson.Get(a, "content").Str, "condensed by condense-proxy") {
		t.Fatalf("arguments %s", a)
	}
}

func FuzzApply(f *testing.F) {
	f.Add(session(3), 5, 1)
	f.Add([]byte(`{"messages":[{"role":"tool","content":[1,2]},{"role":"tool","content":{"a":1}}]}`), 1, 0)
	f.Fuzz(func(t *testing.T, body []byte, need, keep int) {
		if _, err := chatCodec.Scan(body, o200k); err != nil {
			return
		}
		msgs := units(t, body)
		c := New(Options{KeepRecentToolOutputs: keep % 4, MinToolOutputTokens: 1}, count, nil)
		res, err := c.Apply(context.Background(), Request{Codec: chatCodec, Body: body, Messages: msgs, Need: need, Scope: "s"})
		if err != nil {
			t.Fatal(err)
		}
		if !gjson.ValidBytes(res.Body) {
			t.Fatalf("invalid JSON out of valid JSON:\n%s", res.Body)
		}
		if len(units(t, res.Body)) != len(msgs) {
			t.Fatal("message count changed")
		}
	})
}

// TestBrief: a brief is a digest's marker line alone, except for logs
// (their failing tests and errors stay) and LLM digests.
func TestBrief(t *testing.T) {
	cases := []struct {
		name, digest string
		keep         bool
	}{
		{"file", "[condense-proxy digest of read_file a.go — file, original 100 lines, 900 tokens; id d1: GET /v1/condense/originals/d1]\nfile a.go\noutline:", false},
		{"search", "[condense-proxy digest of grep x — search, original 40 lines, 600 tokens; id d2: GET /v1/condense/originals/d2]\n40 matches", false},
		{"log", "[condense-proxy digest of bash go test — log, original 90 lines, 800 tokens; id d3: GET /v1/condense/originals/d3]\n--- FAIL: TestX", true},
		{"llm", "[condense-proxy digest of bash ls — LLM digest, original 90 lines, 800 tokens; id d4: GET /v1/condense/originals/d4]\nsummary", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := brief(tc.digest)
			if tc.keep && got != tc.digest {
				t.Errorf("brief dropped a %s digest's body: %q", tc.name, got)
			}
			if !tc.keep && (strings.Contains(got, "\n") || len(got) >= strings.Index(tc.digest, "\n") || !strings.HasPrefix(got, "[condense-proxy brief of ") ||
				!strings.Contains(got, "/v1/condense/originals/") || !strings.Contains(got, " lines")) {
				t.Errorf("brief of a %s digest: %q", tc.name, got)
			}
		})
	}
}

// TestIdleMeansApplyChangesNothing: on requests of tool outputs of every
// size, Idle is true exactly when no output reaches the smallest size
// digested (inputs not cleared), and then Apply changes nothing, whatever
// its ProtectFrom and BriefBefore; with inputs cleared it is never idle.
func TestIdleMeansApplyChangesNothing(t *testing.T) {
	outputs := []string{"ok", "small output", strings.Repeat("x ", 300), bigLog(1), strings.Repeat("line\n", 2000)}
	for seed := 0; seed < 60; seed++ {
		var b bytes.Buffer
		b.WriteString(`{"model":"gpt-4o","messages":[{"role":"user","content":"go"}`)
		n := 1 + seed%7
		for i := 0; i < n; i++ {
			args, _ := json.Marshal(map[string]string{"command": strings.Repeat("c", 1+(seed*i)%900)})
			fmt.Fprintf(&b, `,{"role":"assistant","content":"run","tool_calls":[{"id":"c%d","type":"function","function":{"name":"bash","arguments":%s}}]}`, i, quote(string(args)))
			fmt.Fprintf(&b, `,{"role":"tool","tool_call_id":"c%d","content":%s}`, i, quote(outputs[(seed+i*3)%len(outputs)]))
		}
		b.WriteString(`]}`)
		r, err := chatCodec.Scan(b.Bytes(), o200k)
		if err != nil {
			t.Fatal(err)
		}
		if err := chatCodec.Parse(r); err != nil {
			t.Fatal(err)
		}
		msgs := Messages(r)
		for _, min := range []int{0, 100, 200} {
			c := New(Options{KeepRecentToolOutputs: -1}, count, nil)
			idle := c.Idle(r, min)
			least := min
			if least == 0 {
				least = c.MinTokens()
			}
			large := false
			for _, m := range msgs {
				large = large || (m.Role == view.RoleTool && m.Tokens >= least)
			}
			if idle == large {
				t.Fatalf("seed %d min %d: Idle %v with an output of %d tokens or more: %v", seed, min, idle, least, large)
			}
			if cleared := New(Options{ClearToolInputs: true}, count, nil); cleared.Idle(r, min) {
				t.Fatalf("seed %d: idle though tool inputs are cleared", seed)
			}
			if !idle {
				continue
			}
			for protect := 0; protect <= len(msgs); protect++ {
				res, err := c.Apply(context.Background(), Request{Body: r.Body, Messages: msgs, Codec: chatCodec, Encoding: tokenizer.O200kBase,
					Need: 1 << 30, MinTokens: min, ProtectFrom: protect, BriefBefore: len(msgs) - protect, Scope: "s"})
				if err != nil || len(res.Patches) > 0 || !bytes.Equal(res.Body, r.Body) {
					t.Fatalf("seed %d: idle, yet Apply made %d patches (%v)", seed, len(res.Patches), err)
				}
			}
		}
	}
}
