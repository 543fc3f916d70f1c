package responses

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math/rand"
	"reflect"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/condense-proxy/condense-proxy/jsonscan"
)

// q quotes s as a JSON string.
func q(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// codexSession builds the input items of a long Codex-like session: the
// developer prompt items, AGENTS.md and environment context as user
// messages, the task, then turns of reasoning (with encrypted_content) and
// exec_command function calls with large outputs, occasional assistant
// preambles, parallel calls, apply_patch custom tool calls, web searches
// and user follow-ups. The last item is a function_call_output (the request
// Codex sends after running a command). Items are raw JSON in Codex's own
// key order, with ids as the API returns them.
func codexSession(seed int64, turns int) []string { return codexSessionSized(seed, turns, 60, 160) }

// codexSessionSized is codexSession with command outputs of minLines to
// minLines+spread lines.
func codexSessionSized(seed int64, turns, minLines, spread int) []string {
	rng := rand.New(rand.NewSource(seed))
	enc := func(n int) string {
		b := make([]byte, n)
		rng.Read(b)
		return base64.StdEncoding.EncodeToString(b)
	}
	msg := func(role, partType, text string) string {
		return fmt.Sprintf(`{"type":"message","role":%q,"content":[{"type":%q,"text":%s}]}`, role, partType, q(text))
	}
	items := []string{
		msg("developer", "input_text", "<permissions instructions>\nFilesystem sandboxing: workspace-write. Approval policy: never.\n</permissions instructions>"),
		msg("developer", "input_text", "You are Codex, a coding agent. Keep going until the task is solved. "+strings.Repeat("Prefer small, verifiable steps. ", 40)),
		msg("user", "input_text", "# AGENTS.md instructions for /repo\n\n<INSTRUCTIONS>\nRun go test ./... before finishing.\n</INSTRUCTIONS>"),
		msg("user", "input_text", "<environment_context>\n  <cwd>/repo</cwd>\n  <shell>bash</shell>\n</environment_context>"),
		msg("user", "input_text", "Fix the failing test TestParseDuration in pkg/timeparse and keep the API stable."),
	}
	output := func(turn, file int) string {
		var b strings.Builder
		fmt.Fprintf(&b, "Chunk ID: %04x\nWall time: 0.01 seconds\nProcess exited with code 0\nOutput:\n", turn)
		lines := minLines + rng.Intn(spread)
		for l := 1; l <= lines; l++ {
			switch {
			case l%12 == 1:
				fmt.Fprintf(&b, "func f%d(x int) (int, error) { // pkg/file%d.go turn %d\n", l, file, turn)
			case l%12 == 0:
				b.WriteString("}\n")
			default:
				fmt.Fprintf(&b, "\tv%d := strconv.Itoa(x * %d) + fmt.Sprint(%d)\n", l, rng.Intn(1000), rng.Intn(100000))
			}
		}
		if rng.Intn(6) == 0 {
			b.WriteString("--- FAIL: TestParseDuration (0.00s)\n    timeparse_test.go:42: got 1h, want 90m\n")
		}
		return b.String()
	}
	call := 0
	for i := 0; i < turns; i++ {
		if i > 0 && rng.Intn(12) == 0 {
			items = append(items, msg("user", "input_text", fmt.Sprintf("Follow-up %d: also check the error messages.", i)))
		}
		items = append(items, fmt.Sprintf(`{"type":"reasoning","id":"rs_%03d","summary":[{"type":"summary_text","text":%s}],"encrypted_content":%q}`,
			i, q(fmt.Sprintf("**Inspecting files**\n\nI need to look at pkg/file%d.go next.", i)), enc(300+rng.Intn(900))))
		switch k := rng.Intn(10); {
		case k == 0:
			// A turn that ends with an answer (the user speaks next).
			items = append(items, fmt.Sprintf(`{"type":"message","id":"msg_%03d","role":"assistant","content":[{"type":"output_text","annotations":[],"text":%s}]}`,
				i, q(fmt.Sprintf("Step %d done: the parser now handles minutes.", i))))
			items = append(items, msg("user", "input_text", fmt.Sprintf("Continue with step %d.", i+1)))
			continue
		case k == 1:
			items = append(items, fmt.Sprintf(`{"type":"message","id":"msg_%03d","role":"assistant","content":[{"type":"output_text","annotations":[],"text":%s}]}`,
				i, q("I'll run the tests to see where it fails.")))
		case k == 2:
			items = append(items, fmt.Sprintf(`{"type":"web_search_call","id":"ws_%03d","status":"completed","action":{"type":"search","query":"go time.ParseDuration minutes"}}`, i))
		}
		n := 1
		if rng.Intn(5) == 0 {
			n = 2 // parallel calls
		}
		var ids []string
		patch := rng.Intn(8) == 0
		for c := 0; c < n; c++ {
			call++
			id := fmt.Sprintf("call_%04d", call)
			ids = append(ids, id)
			if patch && c == 0 {
				items = append(items, fmt.Sprintf(`{"type":"custom_tool_call","id":"ctc_%04d","status":"completed","call_id":%q,"name":"apply_patch","input":%s}`,
					call, id, q("*** Begin Patch\n*** Update File: pkg/timeparse/parse.go\n@@\n-\treturn 0\n+\treturn d\n*** End Patch")))
				continue
			}
			args := fmt.Sprintf(`{"cmd":"cat pkg/file%d.go","workdir":"/repo","max_output_tokens":6000}`, rng.Intn(40))
			if rng.Intn(15) == 0 {
				args = fmt.Sprintf(`{"cmd":%s,"workdir":"/repo"}`, q("cat > pkg/big.go <<'EOF'\n"+strings.Repeat("// generated line of a big file written by a heredoc\n", 80)+"EOF"))
			}
			items = append(items, fmt.Sprintf(`{"type":"function_call","id":"fc_%04d","name":"exec_command","arguments":%s,"call_id":%q}`, call, q(args), id))
		}
		for c, id := range ids {
			if patch && c == 0 {
				items = append(items, fmt.Sprintf(`{"type":"custom_tool_call_output","call_id":%q,"output":%s}`, id,
					q(`{"output":"Success. Updated the following files:\nM pkg/timeparse/parse.go\n","metadata":{"exit_code":0}}`)))
				continue
			}
			items = append(items, fmt.Sprintf(`{"type":"function_call_output","call_id":%q,"output":%s}`, id, q(output(i, rng.Intn(40)))))
		}
	}
	return items
}

// codexBody wraps items in a request body as Codex sends it, with fields
// the codec must leave untouched.
func codexBody(items []string) []byte {
	return []byte(`{"model":"gpt-5-codex","input":[` + strings.Join(items, ",") + `],` +
		`"tools":[{"type":"function","name":"exec_command","description":"Runs a command in a PTY.","strict":false,"parameters":{"type":"object","properties":{"cmd":{"type":"string"},"workdir":{"type":"string"}},"required":["cmd"]}},` +
		`{"type":"function","name":"write_stdin","description":"Writes to a session.","strict":false,"parameters":{"type":"object","properties":{"session_id":{"type":"number"},"chars":{"type":"string"}},"required":["session_id"]}},` +
		`{"type":"custom","name":"apply_patch","description":"Apply a patch.","format":{"type":"grammar","syntax":"lark","definition":"start: begin_patch hunk+ end_patch"}}],` +
		`"tool_choice":"auto","parallel_tool_calls":true,"reasoning":{"effort":"medium","summary":"auto"},"store":false,"stream":true,` +
		`"include":["reasoning.encrypted_content"],"prompt_cache_key":"019a7c1e-5c3b-7f12-9d0e-2b8c4e1f6a90","text":{"verbosity":"low"},` +
		`"client_metadata":{"originator":"codex_exec"},"x_unknown":{"keep":[1,2,3]}}`)
}

// inputItems returns the raw items of a body's input array and the body
// outside it (before and after the array).
func inputItems(t testing.TB, body []byte) (items []string, before, after string) {
	t.Helper()
	obj, ok := jsonscan.ScanObject(body, "input")
	if !ok || obj.Array[1] == 0 {
		t.Fatalf("not a Responses body: %.200s", body)
	}
	for _, sp := range obj.Elements {
		items = append(items, string(body[sp[0]:sp[1]]))
	}
	return items, string(body[:obj.Array[0]]), string(body[obj.Array[1]:])
}

// checkValid checks that out, the condensed form of in, is a request the
// Responses API accepts and that nothing was edited that must not be:
//   - every byte outside the input array is as received;
//   - calls and outputs pair both ways by call_id, each output after its
//     call, no call left unanswered;
//   - a reasoning item is followed by an item it produced (a call or an
//     assistant message);
//   - every item with encrypted_content is byte-identical to a received one;
//   - every item with an id or call_id is a received item with only its
//     output (digest) or arguments (cleared inputs) changed;
//   - every other item is a received item verbatim, a note (a user
//     message of one input_text part, no id) or a user message whose text
//     the shrinking of the newest steps digested.
func checkValid(t testing.TB, in, out []byte) {
	t.Helper()
	inItems, inBefore, inAfter := inputItems(t, in)
	outItems, outBefore, outAfter := inputItems(t, out)
	if inBefore != outBefore || inAfter != outAfter {
		t.Fatalf("bytes outside the input array changed")
	}
	raws := map[string]bool{}
	byKey := map[string]map[string]any{}
	key := func(g gjson.Result) string {
		if id := g.Get("id").Str; id != "" {
			return g.Get("type").Str + "/id/" + id
		}
		if id := g.Get("call_id").Str; id != "" {
			return g.Get("type").Str + "/call/" + id
		}
		return ""
	}
	for _, raw := range inItems {
		raws[raw] = true
		if k := key(gjson.Parse(raw)); k != "" {
			var m map[string]any
			json.Unmarshal([]byte(raw), &m)
			byKey[k] = m
		}
	}
	pending := map[string]bool{}
	modelOutput := func(g gjson.Result) bool {
		switch g.Get("type").Str {
		case "function_call", "custom_tool_call", "local_shell_call", "reasoning", "web_search_call":
			return true
		case "message":
			return g.Get("role").Str == "assistant"
		}
		return false
	}
	for i, raw := range outItems {
		g := gjson.Parse(raw)
		typ := g.Get("type").Str
		switch typ {
		case "function_call", "custom_tool_call", "local_shell_call":
			id := g.Get("call_id").Str
			if pending[id] {
				t.Fatalf("item %d: call_id %s called twice", i, id)
			}
			pending[id] = true
		case "function_call_output", "custom_tool_call_output", "local_shell_call_output":
			id := g.Get("call_id").Str
			if !pending[id] {
				t.Fatalf("item %d: No tool call found for function call output with call_id %s", i, id)
			}
			delete(pending, id)
		case "reasoning":
			if i+1 == len(outItems) || !modelOutput(gjson.Parse(outItems[i+1])) || gjson.Parse(outItems[i+1]).Get("type").Str == "reasoning" {
				t.Fatalf("item %d: reasoning %s without the item it produced", i, g.Get("id").Str)
			}
		}
		if g.Get("encrypted_content").Exists() && !raws[raw] {
			t.Fatalf("item %d: an item with encrypted_content was edited or invented", i)
		}
		if raws[raw] {
			continue
		}
		k := key(g)
		if k == "" {
			note := g.Get("content.#").Int() == 1 && g.Get("content.0.type").Str == "input_text"
			digested := strings.HasPrefix(g.Get("content").Str, "[condense-proxy digest of ")
			if typ != "message" || g.Get("role").Str != "user" || !(note || digested) {
				t.Fatalf("item %d: invented item that is neither a note nor a digested user message: %.300s", i, raw)
			}
			continue
		}
		orig, ok := byKey[k]
		if !ok {
			t.Fatalf("item %d: %s was not received", i, k)
		}
		var m map[string]any
		json.Unmarshal([]byte(raw), &m)
		for _, f := range []string{"output", "arguments"} {
			if _, ok := m[f]; ok {
				delete(m, f)
				o := map[string]any{}
				for k2, v := range orig {
					o[k2] = v
				}
				delete(o, f)
				orig = o
			}
		}
		if !reflect.DeepEqual(m, orig) {
			t.Fatalf("item %d (%s): fields other than output/arguments changed", i, k)
		}
	}
	if len(pending) > 0 {
		t.Fatalf("No tool output found for function calls %v", pending)
	}
}

// bytesEqual reports whether two bodies are the same bytes.
func bytesEqual(a, b []byte) bool { return bytes.Equal(a, b) }
