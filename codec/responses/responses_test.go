package responses

import (
	"errors"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/condense-proxy/condense-proxy/tokenizer"
	"github.com/condense-proxy/condense-proxy/view"
)

func o200k(string) string { return tokenizer.O200kBase }

func newCodec() *Codec { return New(tokenizer.New(tokenizer.Options{})) }

func TestScanNotARequest(t *testing.T) {
	tests := map[string]string{
		"not JSON":                    `{"input":[`,
		"not an object":               `[{"type":"message"}]`,
		"input absent":                `{"model":"gpt-5","previous_response_id":"resp_1"}`,
		"input a string (one turn)":   `{"model":"gpt-5","input":"hello"}`,
		"input an object":             `{"model":"gpt-5","input":{"role":"user"}}`,
		"escaped top-level key":       `{"model":"gpt-5","inp\u0075t":[{"role":"user","content":"x"}]}`,
		"repeated key, string last":   `{"input":[{"role":"user","content":"x"}],"input":"y"}`,
		"trailing garbage":            `{"input":[]} x`,
		"escaped key shadowing model": `{"input":[],"mod\u0065l":"gpt-4"}`,
	}
	c := newCodec()
	for name, body := range tests {
		t.Run(name, func(t *testing.T) {
			if _, err := c.Scan([]byte(body), o200k); !errors.Is(err, view.ErrNotRequest) {
				t.Fatalf("err %v, want ErrNotRequest", err)
			}
		})
	}
}

func TestScanRepeatedInputTakesTheLast(t *testing.T) {
	r, err := newCodec().Scan([]byte(`{"input":"x","input":[{"role":"user","content":"a"},{"role":"user","content":"b"}]}`), o200k)
	if err != nil || len(r.Items) != 2 {
		t.Fatalf("%v %+v", err, r)
	}
}

func TestScanItemLimit(t *testing.T) {
	c := New(tokenizer.New(tokenizer.Options{MaxMessages: 2}))
	body := []byte(`{"input":[{"role":"user","content":"a"},{"role":"user","content":"b"},{"role":"user","content":"c"}]}`)
	if _, err := c.Scan(body, o200k); !errors.Is(err, view.ErrTooManyItems) {
		t.Fatalf("err %v, want ErrTooManyItems", err)
	}
}

func TestScanModelAndCache(t *testing.T) {
	c := newCodec()
	body := codexBody(codexSession(1, 10))
	var asked string
	r, err := c.Scan(body, func(m string) string { asked = m; return tokenizer.O200kBase })
	if err != nil {
		t.Fatal(err)
	}
	if r.Model != "gpt-5-codex" || asked != "gpt-5-codex" {
		t.Fatalf("model %q, asked %q", r.Model, asked)
	}
	if r.CacheHits != 0 {
		t.Fatalf("cold scan: %d cache hits", r.CacheHits)
	}
	sum := 0
	for _, it := range r.Items {
		sum += it.Tokens
	}
	if r.Total <= sum {
		t.Fatalf("total %d does not count tools and overheads (items %d)", r.Total, sum)
	}
	r2, _ := c.Scan(body, o200k)
	if r2.CacheHits != len(r2.Items) || r2.Total != r.Total {
		t.Fatalf("warm scan: %d of %d hits, total %d vs %d", r2.CacheHits, len(r2.Items), r2.Total, r.Total)
	}
}

// itemTokens scans a one-item request and returns the item's count.
func itemTokens(t *testing.T, c *Codec, item string) int {
	t.Helper()
	r, err := c.Scan([]byte(`{"input":[`+item+`]}`), o200k)
	if err != nil {
		t.Fatal(err)
	}
	return r.Items[0].Tokens
}

func TestCountRules(t *testing.T) {
	c := newCodec()
	text := func(s string) int { return c.counter.Text(tokenizer.O200kBase, s) }
	long := strings.Repeat("the quick brown fox jumps over the lazy dog\n", 50)
	blob := strings.Repeat("QUJD", 1000) // 4000 characters of base64
	tests := []struct {
		name string
		item string
		want int
	}{
		{"message text parts", `{"type":"message","role":"user","content":[{"type":"input_text","text":` + q(long) + `},{"type":"input_text","text":"hi"}]}`,
			itemOverhead + text(long) + text("hi")},
		{"easy message, string content", `{"role":"developer","content":` + q(long) + `}`, itemOverhead + text(long)},
		{"assistant output_text and refusal", `{"type":"message","role":"assistant","id":"msg_1","status":"completed","content":[{"type":"output_text","text":"done","annotations":[]},{"type":"refusal","refusal":"no"}]}`,
			itemOverhead + text("done") + text("no")},
		{"function_call name and arguments", `{"type":"function_call","id":"fc_1","call_id":"call_1","name":"exec_command","arguments":"{\"cmd\":\"ls -la\"}"}`,
			itemOverhead + text("exec_command") + text(`{"cmd":"ls -la"}`)},
		{"custom tool call input", `{"type":"custom_tool_call","call_id":"c","name":"apply_patch","input":` + q(long) + `}`,
			itemOverhead + text("apply_patch") + text(long)},
		{"output string", `{"type":"function_call_output","call_id":"call_1","output":` + q(long) + `}`, itemOverhead + text(long)},
		{"output text parts", `{"type":"function_call_output","call_id":"call_1","output":[{"type":"input_text","text":` + q(long) + `}]}`, itemOverhead + text(long)},
		{"output image part: fixed", `{"type":"function_call_output","call_id":"call_1","output":[{"type":"input_image","image_url":"data:image/png;base64,` + blob + `"}]}`, itemOverhead + imageHigh},
		{"user image, low detail", `{"role":"user","content":[{"type":"input_image","detail":"low","image_url":"data:image/png;base64,` + blob + `"}]}`, itemOverhead + imageLow},
		{"reasoning: summary text and encrypted estimate", `{"type":"reasoning","id":"rs_1","summary":[{"type":"summary_text","text":` + q(long) + `}],"encrypted_content":"` + blob + `"}`,
			itemOverhead + text(long) + 1000},
		{"compaction: encrypted estimate", `{"type":"compaction","id":"cmp_1","encrypted_content":"` + blob + `"}`, itemOverhead + 1000},
		{"local shell call: action JSON", `{"type":"local_shell_call","call_id":"ls_1","status":"completed","action":{"type":"exec","command":["ls"]}}`,
			itemOverhead + text(`{"type":"exec","command":["ls"]}`)},
		{"unknown type: its fields", `{"type":"item_reference","id":"msg_9"}`, itemOverhead},
		{"computer screenshot: fixed", `{"type":"computer_call_output","call_id":"cc","output":{"type":"computer_screenshot","image_url":"data:image/png;base64,` + blob + `"}}`, itemOverhead + imageHigh},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := itemTokens(t, c, tc.item); got != tc.want {
				t.Errorf("tokens %d, want %d", got, tc.want)
			}
		})
	}
}

func TestCountRestIntoTotal(t *testing.T) {
	c := newCodec()
	text := func(s string) int { return c.counter.Text(tokenizer.O200kBase, s) }
	item := `{"role":"user","content":"hi"}`
	base := `{"model":"gpt-5","input":[` + item + `]`
	bare, _ := c.Scan([]byte(base+`}`), o200k)
	if want := itemOverhead + text("hi") + replyPriming; bare.Total != want {
		t.Fatalf("bare total %d, want %d", bare.Total, want)
	}
	instr := "You are a careful coding agent."
	params := `{"type":"object","properties":{"cmd":{"type":"string"}}}`
	schema := `{"type":"json_schema","name":"out","schema":{"type":"object"}}`
	tests := []struct {
		name, field string
		want        int
	}{
		{"instructions", `"instructions":` + q(instr), instructionsOverhead + text(instr)},
		{"null instructions", `"instructions":null`, 0},
		{"function tool", `"tools":[{"type":"function","name":"exec_command","description":"Run it.","parameters":` + params + `}]`,
			toolsOverhead + toolOverhead + text("exec_command") + text("Run it.") + text(params)},
		{"built-in tool", `"tools":[{"type":"web_search"}]`, toolsOverhead + toolOverhead + text(`{"type":"web_search"}`)},
		{"json schema format", `"text":{"format":` + schema + `,"verbosity":"low"}`, text(schema)},
		{"plain text format", `"text":{"format":{"type":"text"}}`, 0},
		{"settings are not input", `"reasoning":{"effort":"high"},"include":["reasoning.encrypted_content"],"prompt_cache_key":"k","store":false,"client_metadata":{"a":"b"}`, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, err := c.Scan([]byte(base+`,`+tc.field+`}`), o200k)
			if err != nil {
				t.Fatal(err)
			}
			if got := r.Total - bare.Total; got != tc.want {
				t.Errorf("adds %d, want %d", got, tc.want)
			}
		})
	}
}

func TestUntouchable(t *testing.T) {
	tests := map[string]string{
		`"previous_response_id":"resp_123"`: "previous_response_id continues server-side state",
		`"conversation":"conv_123"`:         "conversation continues server-side state",
		`"conversation":{"id":"conv_123"}`:  "conversation continues server-side state",
		`"previous_response_id":null`:       "",
		`"previous_response_id":""`:         "",
		`"store":false`:                     "",
	}
	for field, want := range tests {
		r, err := newCodec().Scan([]byte(`{"model":"gpt-5",`+field+`,"input":[{"role":"user","content":"next"}]}`), o200k)
		if err != nil {
			t.Fatal(err)
		}
		if r.Untouchable != want {
			t.Errorf("%s: untouchable %q, want %q", field, r.Untouchable, want)
		}
	}
}

func TestHead(t *testing.T) {
	dev := `{"type":"message","role":"developer","content":[{"type":"input_text","text":"base prompt"}]}`
	user := `{"role":"user","content":"task"}`
	rs := `{"type":"reasoning","id":"rs_1","summary":[],"encrypted_content":"QQ=="}`
	fc := `{"type":"function_call","call_id":"c1","name":"exec_command","arguments":"{}"}`
	out := `{"type":"function_call_output","call_id":"c1","output":"ok"}`
	cmp := `{"type":"compaction","id":"cmp_1","encrypted_content":"QUJD"}`
	cmpOld := `{"type":"compaction_summary","encrypted_content":"QUJD"}`
	asst := `{"type":"message","role":"assistant","content":[{"type":"output_text","text":"the compaction is done"}]}`
	tests := []struct {
		name       string
		items      []string
		scan, pars int
	}{
		{"developer items and the leading user messages", []string{dev, dev, user, user, rs, fc, out, user}, 4, 4},
		{"no user message", []string{dev, rs, fc, out}, 1, 1},
		{"starts with a model turn", []string{rs, fc, out, user}, 0, 0},
		{"pinned through the latest compaction", []string{dev, user, rs, fc, out, user, cmp, user, rs, fc, out}, 2, 7},
		{"old compaction_summary name", []string{user, cmpOld, rs, fc, out}, 1, 2},
		{"a compaction amid a turn pulls in what is glued to it", []string{user, rs, fc, cmp, out, user}, 1, 5},
		{"text mentioning compaction is not one", []string{user, rs, asst, user}, 1, 1},
	}
	c := newCodec()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, err := c.Scan([]byte(`{"input":[`+strings.Join(tc.items, ",")+`]}`), o200k)
			if err != nil {
				t.Fatal(err)
			}
			if r.Head != tc.scan {
				t.Fatalf("scan head %d, want %d", r.Head, tc.scan)
			}
			if err := c.Parse(r); err != nil {
				t.Fatal(err)
			}
			if r.Head != tc.pars {
				t.Fatalf("parsed head %d, want %d", r.Head, tc.pars)
			}
		})
	}
}

func TestParseItems(t *testing.T) {
	c := newCodec()
	body := `{"input":[` +
		`{"role":"user","content":"task"},` +
		`{"type":"reasoning","id":"rs_1","summary":[{"type":"summary_text","text":"thinking"}],"encrypted_content":"QQ=="},` +
		`{"type":"message","role":"assistant","content":[{"type":"output_text","text":"Let me look."}]},` +
		`{"type":"function_call","id":"fc_1","call_id":"c1","name":"exec_command","arguments":"{\"cmd\":\"ls\"}"},` +
		`{"type":"custom_tool_call","call_id":"c2","name":"apply_patch","input":"*** Begin Patch"},` +
		`{"type":"local_shell_call","id":"ls_1","call_id":"c3","status":"completed","action":{"type":"exec","command":["ls"]}},` +
		`{"type":"function_call_output","call_id":"c1","output":"a.go\nb.go"},` +
		`{"type":"custom_tool_call_output","call_id":"c2","output":[{"type":"input_text","text":"Done"}]},` +
		`{"type":"local_shell_call_output","id":"c3","output":"x"},` +
		`{"type":"reasoning","id":"rs_2","summary":[],"encrypted_content":"QQ=="},` +
		`{"type":"web_search_call","id":"ws_1","status":"completed","action":{"type":"search","query":"go"}},` +
		`{"type":"function_call","call_id":"c4","name":"view_image","arguments":{"path":"a.png"}},` +
		`{"type":"function_call_output","call_id":"c4","output":[{"type":"input_image","image_url":"data:"}]},` +
		`{"type":"message","role":"assistant","content":[{"type":"output_text","text":"Done."}]},` +
		`{"type":"shell_call","call_id":"c5","action":{"commands":["ls"]},"status":"completed"},` +
		`{"type":"apply_patch_call","call_id":"c6","operation":{"type":"update_file","path":"a.go","diff":"-x\n+y"},"status":"completed"},` +
		`{"type":"shell_call_output","call_id":"c5","output":[{"stdout":"a.go","stderr":"","outcome":{"type":"exit","exit_code":0}}]},` +
		`{"type":"apply_patch_call_output","call_id":"c6","status":"completed","output":"patched"}` +
		`]}`
	r, err := c.Scan([]byte(body), o200k)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Parse(r); err != nil {
		t.Fatal(err)
	}
	type want struct {
		role           string
		glue, frozen   bool
		calls, answers string
		argsSpan       bool
		digestible     bool
	}
	wants := []want{
		{role: "user", digestible: true}, // its own text: Own

		{role: "assistant", frozen: true},
		{role: "assistant", glue: true},
		{role: "assistant", glue: true, calls: "c1:exec_command", argsSpan: true},
		{role: "assistant", glue: true, calls: "c2:apply_patch"},
		{role: "assistant", glue: true, calls: "c3:local_shell"},
		{role: "tool", glue: true, answers: "c1", digestible: true},
		{role: "tool", glue: true, answers: "c2", digestible: true},
		{role: "tool", glue: true, answers: "c3", digestible: true},
		{role: "assistant", frozen: true},
		{role: "assistant", glue: true, frozen: true},
		{role: "assistant", glue: true, calls: "c4:view_image"},
		{role: "tool", glue: true, answers: "c4"},
		{role: "assistant"},
		{role: "assistant", glue: true, calls: "c5:shell"},
		{role: "assistant", glue: true, calls: "c6:apply_patch"},
		{role: "tool", glue: true, answers: "c5"},
		{role: "tool", glue: true, answers: "c6", digestible: true},
	}
	if len(r.Items) != len(wants) {
		t.Fatalf("%d items", len(r.Items))
	}
	for i, w := range wants {
		it := r.Items[i]
		var calls []string
		for _, cl := range it.Calls {
			calls = append(calls, cl.ID+":"+cl.Name)
		}
		got := want{role: it.Role, glue: it.Glue, frozen: it.Frozen, calls: strings.Join(calls, ","), answers: strings.Join(it.Answers, ",")}
		if len(it.Calls) > 0 {
			got.argsSpan = it.Calls[0].ArgsSpan[1] > 0
		}
		if len(it.Outputs) > 0 {
			got.digestible = !it.Outputs[0].Frozen && it.Outputs[0].Value[1] > 0
		}
		if got != w {
			t.Errorf("item %d: %+v, want %+v", i, got, w)
		}
	}
	// The arguments span is the string value; the output value span is
	// relative to the item.
	call := r.Items[3].Calls[0]
	if s := r.Span(call.ArgsSpan[0], call.ArgsSpan[1]); s != `"{\"cmd\":\"ls\"}"` || call.Args != `{"cmd":"ls"}` {
		t.Errorf("args span %s, args %s", s, call.Args)
	}
	o := r.Items[6].Outputs[0]
	if v := r.Raw(6)[o.Value[0]:o.Value[1]]; v != `"a.go\nb.go"` {
		t.Errorf("output value %s", v)
	}
}

func TestParseInvalid(t *testing.T) {
	tests := map[string]string{
		"unknown item type":      `{"type":"item_reference","id":"msg_1"}`,
		"mcp approval":           `{"type":"mcp_approval_request","id":"a","name":"x","arguments":"{}","server_label":"s"}`,
		"unknown role":           `{"role":"tool","content":"x"}`,
		"not an object":          `"hello"`,
		"type not a string":      `{"type":1}`,
		"output without call_id": `{"type":"function_call_output","output":"x"}`,
		"no type and no role":    `{"content":"x"}`,
	}
	c := newCodec()
	for name, item := range tests {
		t.Run(name, func(t *testing.T) {
			r, err := c.Scan([]byte(`{"input":[{"role":"user","content":"task"},{"type":"reasoning","summary":[]},`+item+`]}`), o200k)
			if err != nil {
				t.Fatal(err)
			}
			if err := c.Parse(r); !errors.Is(err, view.ErrInvalid) {
				t.Fatalf("err %v, want ErrInvalid", err)
			}
		})
	}
}

func TestText(t *testing.T) {
	c := newCodec()
	body := `{"input":[` +
		`{"type":"message","role":"user","content":[{"type":"input_text","text":"fix it"},{"type":"input_image","image_url":"x"}]},` +
		`{"type":"reasoning","summary":[{"type":"summary_text","text":"**Plan**"},{"type":"summary_text","text":"read files"}],"encrypted_content":"QQ=="},` +
		`{"type":"function_call","call_id":"c1","name":"exec_command","arguments":"{\"cmd\":\"cat a.go\"}"},` +
		`{"type":"function_call_output","call_id":"c1","output":[{"type":"input_text","text":"package a"},{"type":"input_text","text":"func A()"}]},` +
		`{"type":"web_search_call","id":"ws","action":{"type":"search","query":"golang"}},` +
		`{"type":"message","role":"assistant","content":[{"type":"output_text","text":"ok"},{"type":"refusal","refusal":"no"}]}` +
		`]}`
	r, _ := c.Scan([]byte(body), o200k)
	if err := c.Parse(r); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		i          int
		role, text string
		calls      int
		result     string
	}{
		{0, "user", "fix it\n[input_image]", 0, ""},
		{1, "assistant", "**Plan**\nread files", 0, ""},
		{2, "assistant", "", 1, ""},
		{3, "tool", "", 0, "package a\nfunc A()"},
		{4, "assistant", "[web_search_call query=golang]", 0, ""},
		{5, "assistant", "ok\nno", 0, ""},
	}
	for _, tc := range tests {
		got := c.Text(r, tc.i)
		res := ""
		if len(got.Results) > 0 {
			res = got.Results[0].Text
			if got.Results[0].CallID != "c1" {
				t.Errorf("%d: result call id %q", tc.i, got.Results[0].CallID)
			}
		}
		if got.Role != tc.role || got.Text != tc.text || len(got.Calls) != tc.calls || res != tc.result {
			t.Errorf("%d: %+v", tc.i, got)
		}
	}
}

func TestNote(t *testing.T) {
	n := newCodec().Note("summary <x> \"quoted\"\nline")
	g := gjson.ParseBytes(n)
	if !gjson.ValidBytes(n) || g.Get("type").Str != "message" || g.Get("role").Str != "user" ||
		g.Get("content.0.type").Str != "input_text" || g.Get("content.0.text").Str != "summary <x> \"quoted\"\nline" || g.Get("id").Exists() {
		t.Fatalf("note %s", n)
	}
}

func TestSplice(t *testing.T) {
	c := newCodec()
	body := []byte(`{ "model" : "m", "input" : [ {"role":"user","content":"a"} , {"role":"user","content":"b"},{"role":"user","content":"c"} ], "z" : 1 }`)
	r, err := c.Scan(body, o200k)
	if err != nil {
		t.Fatal(err)
	}
	out, err := c.Splice(r, view.Edit{From: 1, To: 2, Insert: [][]byte{c.Note("n")}})
	if err != nil {
		t.Fatal(err)
	}
	want := `{ "model" : "m", "input" : [{"role":"user","content":"a"},{"type":"message","role":"user","content":[{"type":"input_text","text":"n"}]},{"role":"user","content":"c"}], "z" : 1 }`
	if string(out) != want {
		t.Fatalf("got  %s\nwant %s", out, want)
	}
	if _, err := c.Splice(&view.Request{Body: body}, view.Edit{}); err == nil {
		t.Fatal("splice of an unscanned request")
	}
}
