package goldenview

import (
	"regexp"
	"strings"
	"testing"

	"github.com/condense-proxy/condense-proxy/codec/chat"
	"github.com/condense-proxy/condense-proxy/tokenizer"
)

var chatCodec = chat.New(tokenizer.New(tokenizer.Options{}))

// chatBody is a chat completions request of messages (raw JSON each)
// and extra top-level fields.
func chatBody(extra string, msgs ...string) []byte {
	return []byte(`{"model":"gpt-4o","messages":[` + strings.Join(msgs, ",") + `]` + extra + `}`)
}

const (
	sys  = `{"role":"system","content":"You are an agent."}`
	task = `{"role":"user","content":"Fix the tests."}`
	call = `{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"bash","arguments":"{\"command\":\"go test\"}"}}]}`
	out  = `{"role":"tool","tool_call_id":"c1","content":"FAIL: TestX\nexit 1"}`
	ask  = `{"role":"user","content":"Go on."}`
)

// TestRender: the items kept are runs of letters after their index as
// received, the others show the ids of their new texts (and their
// counts), the texts noted; a change around the items is the frame's.
func TestRender(t *testing.T) {
	in := chatBody("", sys, task, call, out, ask)
	digest := `{"role":"tool","tool_call_id":"c1","content":"[digest of bash: 2 lines]"}`
	note := `{"role":"user","content":"[2 earlier messages omitted]"}`
	ids := regexp.MustCompile(`#[0-9a-f]{6}\b`)
	counts := regexp.MustCompile(` [0-9]+t\]`)
	for _, c := range []struct {
		name  string
		out   []byte
		shape string
		text  string // the one text noted
	}{
		{"same", in, "= as received", ""},
		{"digest", chatBody("", sys, task, call, digest, ask), "0:SUA T[#ID Nt] 4:U", "[digest of bash: 2 lines]"},
		{"window", chatBody("", sys, task, note, ask), "0:SU U[#ID Nt] 4:U", "[2 earlier messages omitted]"},
		{"frame", chatBody(`,"tools":[]`, sys, task, call, out, ask), "frame[~#ID] 0:SUATU", `+ ,"tools":[]`},
		{"moved", chatBody("", sys, task, call, ask, out), "0:SUA 4:U 3:T", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := NewBook()
			got := b.Render(chatCodec, in, c.out)
			sum, shape, _ := strings.Cut(got, " | ")
			if sum != Sum(c.out) {
				t.Errorf("hash %s, want %s", sum, Sum(c.out))
			}
			if shape = counts.ReplaceAllString(ids.ReplaceAllString(shape, "#ID"), " Nt]"); shape != c.shape {
				t.Errorf("shape %s, want %s", shape, c.shape)
			}
			var texts []string
			for id, text := range b.texts {
				if !strings.Contains(got, "#"+id) {
					t.Errorf("text #%s noted, not named", id)
				}
				texts = append(texts, text)
			}
			if c.text == "" && len(texts) > 0 || c.text != "" && (len(texts) != 1 || texts[0] != c.text) {
				t.Errorf("texts %q, want %q", texts, c.text)
			}
		})
	}
}

// TestTexts: a golden file lists each text its lines name once, cut to
// its bounds, and reads back as written (Keep rewrites a case as it was).
func TestTexts(t *testing.T) {
	in := chatBody("", sys, task, call, out, ask)
	long := strings.Repeat("a header longer than a line as listed, ", 5) + strings.Repeat("\\na line of the digest", 20)
	fwd := chatBody("", sys, task, call, `{"role":"tool","tool_call_id":"c1","content":"`+long+`"}`, ask)
	b := NewBook()
	line := "case 0: " + b.Render(chatCodec, in, fwd)
	b.Add(line)
	b.Add("case 1: " + b.Render(chatCodec, in, fwd))
	file := b.Bytes("a test's file\nsecond line")
	g := Parse(file)
	if len(g.Lines) != 2 || g.Lines[0] != line {
		t.Fatalf("lines read back: %q", g.Lines)
	}
	ids := idsIn(line)
	if len(ids) != 1 || strings.Count(string(file), "\n#"+ids[0]+"\n") != 1 {
		t.Fatalf("text %v not listed once:\n%s", ids, file)
	}
	text := g.Texts[ids[0]]
	lines := strings.Split(text, "\n")
	if len(lines) != MaxLines+1 || lines[MaxLines] != "… 13 more lines" || !strings.HasSuffix(lines[0], "…") || len([]rune(lines[0])) != MaxLineRunes {
		t.Errorf("text not cut to its bounds:\n%s", text)
	}
	k := NewBook()
	k.Keep(g, g.Lines)
	if again := k.Bytes("a test's file\nsecond line"); string(again) != string(file) {
		t.Errorf("kept lines rewrite the file differently:\n%s\nwant\n%s", again, file)
	}
}

// TestDiff: what differs, the common bytes taken off; an insertion reads
// from a JSON delimiter.
func TestDiff(t *testing.T) {
	for _, c := range []struct{ a, b, want string }{
		{`{"a":1}`, `{"a":2}`, "- 1\n+ 2"},
		{`{"thinking":{"type":"enabled"}}`, `{"thinking":{"b":1,"type":"enabled"}}`, `+ "b":1,`},
		{`{"tools":[{"n":1}]}`, `{"tools":[{"n":1},{"n":2}]}`, `+ ,{"n":2}`},
		{`{"a":1,"b":2}`, `{"a":1}`, `- ,"b":2`},
		{`"é"`, `"è"`, "- é\n+ è"},
	} {
		if got := diff(c.a, c.b); got != c.want {
			t.Errorf("diff(%s, %s) = %q, want %q", c.a, c.b, got, c.want)
		}
	}
}

// TestDiffLines names the first request that differs, with both lines.
func TestDiffLines(t *testing.T) {
	want := []string{"a 0: x | 1", "a 1: x | 2", "a 2: x | 3"}
	if d := DiffLines(want, want); d != "" {
		t.Errorf("same lines: %s", d)
	}
	got := []string{"a 0: x | 1", "a 1: x | 9", "a 2: x | 8"}
	d := DiffLines(got, want)
	if !strings.HasPrefix(d, "2 of 3 requests differ") || !strings.Contains(d, "a 1 forwarded differently:\n got  a 1: x | 9\n want a 1: x | 2") {
		t.Errorf("DiffLines: %s", d)
	}
	if d := DiffLines(got[:1], want[:1:1]); d != "" {
		t.Errorf("same first line: %s", d)
	}
	if d := DiffLines(want[:2], want); !strings.Contains(d, "a 2 was not sent") {
		t.Errorf("a request missing: %s", d)
	}
}
