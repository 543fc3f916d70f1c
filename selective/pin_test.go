package selective_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/condense-proxy/condense-proxy/cache"
	"github.com/condense-proxy/condense-proxy/codec/chat"
	"github.com/condense-proxy/condense-proxy/codec/messages"
	"github.com/condense-proxy/condense-proxy/codec/responses"
	"github.com/condense-proxy/condense-proxy/condense"
	"github.com/condense-proxy/condense-proxy/internal/corpus"
	"github.com/condense-proxy/condense-proxy/internal/goldenview"
	"github.com/condense-proxy/condense-proxy/selective"
	"github.com/condense-proxy/condense-proxy/tokenizer"
	"github.com/condense-proxy/condense-proxy/view"
)

// TestForwardedBytesPinned pins the bytes the engine forwards, and the
// originals it keeps, when selective digests run (selective mode, eager
// digests, LLM digests, cleared tool inputs, the newest steps shrunk by
// truncation), on realistic sessions in the three wire formats: synthetic
// sessions, hand-made bodies with the shapes digests must respect (text
// parts, cache_control markers, images, null content, large arguments)
// and, when ../shared/corpus is present, recorded sessions. Each request
// is a line of testdata/pinned/<format>.txt (its hash, its items and new
// texts: internal/goldenview), each case's originals one more; -update
// rewrites the files. A refactor of selective or of the codecs must leave
// every line as it is.
func TestForwardedBytesPinned(t *testing.T) {
	golden := map[string]*goldenview.Golden{}
	books := map[string]*goldenview.Book{}
	for _, f := range pinFormats {
		g, err := goldenview.Read(pinnedFile(f))
		if err != nil && !*selective.UpdateGolden {
			t.Fatalf("%v (%s writes it)", err, pinnedRewrite)
		} else if err != nil {
			g = &goldenview.Golden{Texts: map[string]string{}}
		}
		golden[f], books[f] = g, goldenview.NewBook()
	}
	got := map[string][]string{} // case → its lines
	for _, s := range pinSessions(t) {
		f, _, _ := strings.Cut(s.name, "/")
		for _, v := range pinVariants {
			name := s.name + "/" + v.name
			t.Run(name, func(t *testing.T) {
				lines, condensed := runPinned(t, s, v, books[f])
				got[name] = lines
				if condensed == 0 {
					t.Fatalf("no request was condensed: the case pins nothing")
				}
				if *selective.UpdateGolden {
					return
				}
				if d := goldenview.DiffLines(lines, golden[f].Select(name+" ")); d != "" {
					t.Errorf("forwarded bytes changed: %s", d)
				}
			})
		}
	}
	if t.Failed() {
		return
	}
	for _, f := range pinFormats {
		checkPinned(t, f, golden[f], books[f], got)
	}
}

// checkPinned compares the file of format f with the cases of got in
// that format, or rewrites it; a corpus case not replayed here stays as
// pinned in golden, the file as it was.
func checkPinned(t *testing.T, f string, golden *goldenview.Golden, book *goldenview.Book, got map[string][]string) {
	t.Helper()
	kept := map[string][]string{}
	for _, l := range golden.Lines {
		name := pinCase(l)
		if _, ok := got[name]; !ok {
			kept[name] = append(kept[name], l)
		}
	}
	var names []string
	for n := range got {
		if strings.HasPrefix(n, f+"/") {
			names = append(names, n)
		}
	}
	names = append(names, slices.Collect(maps.Keys(kept))...)
	slices.Sort(names)
	for _, name := range names {
		if ls, ok := got[name]; ok {
			for _, l := range ls {
				book.Add(l)
			}
		} else {
			book.Keep(golden, kept[name])
		}
	}
	goldenview.Check(t, pinnedFile(f), book.Bytes(pinnedHeader(f)), *selective.UpdateGolden, pinnedRewrite)
}

// pinFormats are the wire formats pinned, a file each.
var pinFormats = []string{"chat", "messages", "responses"}

const pinnedRewrite = "go test ./selective/ -run TestForwardedBytesPinned -update"

func pinnedFile(f string) string { return filepath.Join("testdata", "pinned", f+".txt") }

func pinnedHeader(f string) string {
	return `What the engine forwards with selective digests, ` + f + ` requests (TestForwardedBytesPinned, selective).
A line: session/variant request: applied | hash of the body | its items;
then session/variant originals: how many originals were kept, their bytes | hash of them all.
Format: docs/testing.md, Goldens. Rewritten by ` + pinnedRewrite
}

// pinCase returns the case a line of a pinned file is about.
func pinCase(line string) string {
	k := goldenview.Key(line)
	if i := strings.LastIndexByte(k, ' '); i >= 0 {
		return k[:i]
	}
	return k
}

var pinCounter = tokenizer.New(tokenizer.Options{})

// pinSession is a growing conversation: the request bodies an agent sends
// turn after turn.
type pinSession struct {
	name   string
	codec  view.Codec
	window int
	bodies [][]byte
}

type pinVariant struct {
	name string
	mode string
	opts condense.Options
	llm  bool // a fake LLM writes the digests
}

var pinVariants = []pinVariant{
	{name: "selective", mode: condense.ModeSelective, opts: condense.Options{Selective: selective.Options{ClearToolInputs: true}}},
	{name: "eager", mode: condense.ModeSelective, opts: condense.Options{SelectiveEager: true, Selective: selective.Options{KeepRecentToolOutputs: 2}}},
	{name: "llm", mode: condense.ModeSelective, opts: condense.Options{SelectiveSummarizer: "llm"}, llm: true},
	{name: "truncate", mode: condense.ModeTruncate, opts: condense.Options{KeepRecentTurns: 8}},
}

// runPinned sends s's requests, in order, through one engine and returns
// a line per forwarded body (rendered in book), one for the originals
// kept, and how many requests were changed.
func runPinned(t *testing.T, s pinSession, v pinVariant, book *goldenview.Book) ([]string, int) {
	o := v.opts
	o.SelectiveEnabled = true
	o.Summarizer = "extractive"
	o.MinSavingsTokens = s.window / 20
	orig := &recorder{m: map[string][]byte{}}
	deps := condense.Deps{
		Counter: pinCounter,
		Models: condense.ModelsFunc(func(string) condense.ModelLimits {
			return condense.ModelLimits{Window: s.window, Threshold: 0.8, Encoding: tokenizer.O200kBase, SafetyFactor: 1}
		}),
		Cache:     cache.NewMemory(64 << 20),
		Originals: orig,
	}
	if v.llm {
		deps.Summarizer = condense.SummarizerFunc(func(_ context.Context, in condense.SummaryInput) (string, error) {
			return fmt.Sprintf("digest %x", sha256.Sum256([]byte(in.Prompt+"\x00"+in.Text))), nil
		})
	}
	e := condense.New(deps, o)
	name := s.name + "/" + v.name
	var lines []string
	condensed := 0
	var st [5]int
	defer func() {
		t.Logf("%d requests: %d selective; in all bodies, %d digests (%d LLM), %d briefs, %d inputs cleared",
			len(s.bodies), st[4], st[0], st[1], st[2], st[3])
	}()
	for i, body := range s.bodies {
		res, err := e.Condense(context.Background(), condense.Request{Codec: s.codec, Body: body, Mode: v.mode, Scope: "pin"})
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		if !bytes.Equal(res.Body, body) {
			condensed++
		}
		st[0] += bytes.Count(res.Body, []byte("[condense-proxy digest of"))
		st[1] += bytes.Count(res.Body, []byte("LLM digest"))
		st[2] += bytes.Count(res.Body, []byte("[condense-proxy brief of"))
		st[3] += bytes.Count(res.Body, []byte("[condensed by condense-proxy"))
		if res.Report.Applied == condense.AppliedSelective {
			st[4]++
		}
		lines = append(lines, fmt.Sprintf("%s %d: %s | %s", name, i, res.Report.Applied, book.Render(s.codec, body, res.Body)))
	}
	return append(lines, name+" originals: "+orig.summary()), condensed
}

// summary returns how many originals r keeps, their bytes, and the hash
// of them all (keys and values).
func (r *recorder) summary() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var all bytes.Buffer
	size := 0
	for _, k := range slices.Sorted(maps.Keys(r.m)) {
		fmt.Fprintf(&all, "%s %d\n", k, len(r.m[k]))
		all.Write(r.m[k])
		size += len(r.m[k])
	}
	return fmt.Sprintf("%d kept, %d bytes | %s", len(r.m), size, goldenview.Sum(all.Bytes()))
}

// recorder is an originals store that keeps everything.
type recorder struct {
	mu sync.Mutex
	m  map[string][]byte
}

func (r *recorder) Get(_ context.Context, key string) ([]byte, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	v, ok := r.m[key]
	return v, ok
}

func (r *recorder) Set(_ context.Context, key string, value []byte, _ time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.m[key] = append([]byte(nil), value...)
}

// pinSessions returns the pinned sessions: synthetic and hand-made in
// each format, and recorded ones when the corpus is present.
func pinSessions(t *testing.T) []pinSession {
	chatC, msgC, respC := chat.New(pinCounter), messages.New(pinCounter), responses.New(pinCounter)
	var out []pinSession
	syn, _ := corpus.Synthetic(7, 160000)
	syn.Name = "synthetic7"
	reasoning := corpus.WithReasoning(syn, 7)
	out = append(out, pinSession{name: "chat/synthetic", codec: chatC, window: 24000, bodies: chatBodies(t, syn, 40)})
	out = append(out, pinSession{name: "responses/synthetic", codec: respC, window: 24000, bodies: responsesBodies(t, corpus.Responses(reasoning), 40)})
	ms, err := corpus.ClaudeMessages(corpus.ClaudeLog(reasoning))
	if err != nil {
		t.Fatal(err)
	}
	out = append(out, pinSession{name: "messages/synthetic", codec: msgC, window: 24000, bodies: messagesBodies(t, ms, 40)})
	for _, f := range []string{"chat", "messages", "responses"} {
		c := map[string]view.Codec{"chat": chatC, "messages": msgC, "responses": respC}[f]
		out = append(out, pinSession{name: f + "/shapes", codec: c, window: 30000, bodies: shapes(f, false)})
		// Tight: the newest steps are shrunk (their outputs, pasted logs
		// and long assistant texts digested).
		out = append(out, pinSession{name: f + "/shapes-tight", codec: c, window: 12000, bodies: shapes(f, false)})
		out = append(out, pinSession{name: f + "/compaction", codec: c, window: 16000, bodies: shapes(f, true)})
	}

	dir := filepath.Join("..", "..", "shared", "corpus", "raw")
	if _, err := os.Stat(dir); err != nil {
		t.Logf("no corpus at %s: recorded sessions not pinned", dir)
		return out
	}
	cs, err := corpus.Load(filepath.Join(dir, "mini-swe-agent", "deepseek_chat_test_1-100__django__django-11910.traj.json"))
	if err != nil {
		t.Fatal(err)
	}
	out = append(out, pinSession{name: "chat/corpus", codec: chatC, window: 16000, bodies: chatBodies(t, cs, 30)})
	out = append(out, pinSession{name: "responses/corpus", codec: respC, window: 16000, bodies: responsesBodies(t, corpus.Responses(cs), 30)})
	cm, err := corpus.LoadMessages(filepath.Join(dir, "claude-code", "d7d349f9-c243-46e2-9a32-4a0eddfc634b.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	out = append(out, pinSession{name: "messages/corpus", codec: msgC, window: 16000, bodies: messagesBodies(t, cm, 30)})
	return out
}

// sample returns at most n of the k indexes [0, k), spread evenly, the
// last always in.
func sample(k, n int) []int {
	var out []int
	for i := 0; i < n && i < k; i++ {
		out = append(out, k-1-i*k/min(n, k))
	}
	sort.Ints(out)
	return out
}

func chatBodies(t *testing.T, s *corpus.Session, n int) [][]byte {
	ends := s.TurnEnds()
	var out [][]byte
	for _, i := range sample(len(ends), n) {
		b, err := s.Request("gpt-4o", ends[i])
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, b)
	}
	return out
}

func responsesBodies(t *testing.T, s *corpus.ResponsesSession, n int) [][]byte {
	var out [][]byte
	for _, i := range sample(s.Turns(), n) {
		b, err := s.Request(i)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, b)
	}
	return out
}

func messagesBodies(t *testing.T, s *corpus.MessagesSession, n int) [][]byte {
	var out [][]byte
	for _, i := range sample(s.Turns(), n) {
		b, err := s.Request(i)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, b)
	}
	return out
}

// shapes returns a hand-made session in format f whose tool outputs take
// every shape a digest meets: strings, text parts, a part marked
// cache_control, an image, null and missing values, a pasted log in a
// user message, a long assistant text, large write arguments; odd white
// space and unknown fields around them.
//
// compact: each request ends with the agent's own compaction instruction
// (Claude Code's), which the engine forwards with its tool outputs
// digested when it does not fit the window.
func shapes(f string, compact bool) [][]byte {
	q := func(s string) string { b, _ := json.Marshal(s); return string(b) }
	log := func(i int) string {
		var b strings.Builder
		for l := 0; l < 120; l++ {
			fmt.Fprintf(&b, "=== RUN   TestCase%d_%d\n--- PASS: TestCase%d_%d (0.00s)\n", i, l, i, l)
		}
		fmt.Fprintf(&b, "--- FAIL: TestPlanted%d (0.01s)\n    planted_test.go:%d: want %d\nFAIL\nexit status 1\n", i, 10+i, i)
		return b.String()
	}
	file := func(i int) string {
		var b strings.Builder
		fmt.Fprintf(&b, "package p%d\n\n", i)
		for l := 0; l < 90; l++ {
			fmt.Fprintf(&b, "// F%d_%d does step %d.\nfunc F%d_%d(x int) int { return x + %d }\n\n", i, l, l, i, l, l)
		}
		return b.String()
	}
	var items []string // the conversation array's elements
	head := map[string][]string{
		"chat":      {`{"role": "system", "content": "You are an agent."}`, `{"content":"Fix the failing tests.","role":"user"}`},
		"messages":  {`{"role":"user","content":[{"type":"text","text":"Fix the failing tests."}]}`},
		"responses": {`{"type":"message","role":"developer","content":[{"type":"input_text","text":"You are an agent."}]}`, `{"type":"message","role":"user","content":[{"type":"input_text","text":"Fix the failing tests."}]}`},
	}[f]
	items = append(items, head...)
	var bodies [][]byte
	emit := func() {
		items := items
		if compact {
			const instruction = "Your task is to create a detailed summary of the conversation so far, paying close attention to the user's explicit requests."
			items = append(items[:len(items):len(items)], map[string]string{
				"chat":      `{"role":"user","content":` + q(instruction) + `}`,
				"messages":  `{"role":"user","content":[{"type":"text","text":` + q(instruction) + `}]}`,
				"responses": `{"type":"message","role":"user","content":[{"type":"input_text","text":` + q(instruction) + `}]}`,
			}[f])
		}
		var b strings.Builder
		switch f {
		case "chat":
			b.WriteString(`{"model": "gpt-4o",  "x_unknown": {"keep": true}, "messages": [` + "\n  ")
			b.WriteString(strings.Join(items, ",\n  "))
			b.WriteString("\n], \"tools\": [{\"type\":\"function\",\"function\":{\"name\":\"bash\",\"parameters\":{}}}], \"stream\": true}")
		case "messages":
			b.WriteString(`{"model":"claude-sonnet-4-5","max_tokens":4096,"system":[{"type":"text","text":"You are an agent.","cache_control":{"type":"ephemeral"}}],"messages":[`)
			b.WriteString(strings.Join(items, ","))
			b.WriteString(`],"tools":[{"name":"bash","input_schema":{"type":"object"}}],"stream":true}`)
		case "responses":
			b.WriteString(`{"model":"gpt-5","stream":true,"input":[`)
			b.WriteString(strings.Join(items, ", "))
			b.WriteString(`],"tools":[{"type":"function","name":"bash","parameters":{}}],"store":false}`)
		}
		bodies = append(bodies, []byte(b.String()))
	}
	for i := 0; i < 18; i++ {
		tool, args := "bash", map[string]string{"command": fmt.Sprintf("go test ./p%d/", i)}
		out := log(i)
		switch i % 6 {
		case 1:
			tool, args, out = "read_file", map[string]string{"path": fmt.Sprintf("p%d/f.go", i)}, file(i)
		case 4:
			tool, args = "write_file", map[string]string{"path": fmt.Sprintf("p%d/g.go", i), "content": file(i)}
			out = "wrote it"
		}
		a, _ := json.Marshal(args)
		id := fmt.Sprintf("call_%d", i)
		// The output's value in each format's shapes.
		var value string
		switch i % 9 {
		case 2: // text parts
			value = map[string]string{
				"chat":      `[{"type":"text","text":` + q(out[:len(out)/2]) + `},{"type":"text","text":` + q(out[len(out)/2:]) + `}]`,
				"messages":  `[{"type":"text","text":` + q(out[:len(out)/2]) + `},{"type":"text","text":` + q(out[len(out)/2:]) + `}]`,
				"responses": `[{"type":"input_text","text":` + q(out[:len(out)/2]) + `},{"type":"output_text","text":` + q(out[len(out)/2:]) + `}]`,
			}[f]
		case 3: // a marked part: never digested
			value = `[{"type":"text","text":` + q(out) + `,"cache_control":{"type":"ephemeral"}}]`
			if f == "responses" {
				value = `[{"type":"input_text","text":` + q(out) + `},{"type":"input_image","image_url":"data:image/png;base64,AAAA"}]`
			}
		case 5: // an image beside text
			value = `[{"type":"text","text":` + q(out) + `},{"type":"image","source":{"type":"base64","media_type":"image/png","data":"AAAA"}}]`
			if f == "responses" {
				value = `[{"type":"input_text","text":` + q(out) + `},{"type":"input_file","file_id":"file_1"}]`
			}
		case 7: // null
			value = "null"
		default:
			value = q(out)
		}
		say := fmt.Sprintf("Step %d.", i)
		if i%5 == 0 {
			say = strings.Repeat(fmt.Sprintf("Thinking aloud about step %d and what the log says. ", i), 60)
		}
		switch f {
		case "chat":
			items = append(items, fmt.Sprintf(`{"role":"assistant","content":%s,"tool_calls":[{"id":%q,"type":"function","function":{"name":%q,"arguments":%s}}]}`, q(say), id, tool, q(string(a))))
			items = append(items, fmt.Sprintf(`{"role":"tool", "tool_call_id":%q,  "content": %s, "x":1}`, id, value))
		case "messages":
			items = append(items, fmt.Sprintf(`{"role":"assistant","content":[{"type":"text","text":%s},{"type":"tool_use","id":%q,"name":%q,"input":%s}]}`, q(say), id, tool, a))
			if value == "null" {
				items = append(items, fmt.Sprintf(`{"role":"user","content":[{"type":"tool_result","tool_use_id":%q}]}`, id))
			} else {
				items = append(items, fmt.Sprintf(`{"role":"user","content":[{"tool_use_id":%q,"type":"tool_result","content":%s,"is_error":false}]}`, id, value))
			}
		case "responses":
			items = append(items, fmt.Sprintf(`{"type":"message","role":"assistant","content":[{"type":"output_text","text":%s,"annotations":[]}]}`, q(say)))
			items = append(items, fmt.Sprintf(`{"type":"function_call","name":%q,"arguments":%s,"call_id":%q}`, tool, q(string(a)), id))
			items = append(items, fmt.Sprintf(`{"type":"function_call_output","call_id":%q,"output":%s}`, id, value))
		}
		if i%8 == 6 {
			// A log pasted into a user message.
			user := map[string]string{
				"chat":      `{"role":"user","content":` + q("This fails:\n"+log(100+i)) + `}`,
				"messages":  `{"role":"user","content":` + q("This fails:\n"+log(100+i)) + `}`,
				"responses": `{"type":"message","role":"user","content":[{"type":"input_text","text":` + q("This fails:\n"+log(100+i)) + `}]}`,
			}[f]
			items = append(items, user)
		}
		if i >= 5 {
			emit()
		}
	}
	return bodies
}
