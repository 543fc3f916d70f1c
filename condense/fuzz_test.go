package condense

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/condense-proxy/condense-proxy/internal/fakeupstream"
)

// conversationFrom turns fuzz bytes into a message list: each byte picks a
// message kind and a size, so the fuzzer explores shapes (runs of tool
// calls, parallel calls, stray tools, long outputs) rather than JSON syntax.
func conversationFrom(data []byte) []map[string]any {
	msgs := []map[string]any{{"role": "system", "content": "sys"}, {"role": "user", "content": "task"}}
	call := 0
	var open []string
	for i, b := range data {
		size := int(b>>3) * 97
		switch b % 8 {
		case 0, 1:
			msgs = append(msgs, map[string]any{"role": "user", "content": strings.Repeat("u ", size/2+1)})
		case 2, 3:
			n := int(b%3) + 1
			var tcs []map[string]any
			for j := 0; j < n; j++ {
				call++
				id := fmt.Sprintf("c%d", call)
				open = append(open, id)
				tcs = append(tcs, map[string]any{"id": id, "type": "function", "function": map[string]any{"name": "bash", "arguments": `{"command":"ls"}`}})
			}
			msgs = append(msgs, map[string]any{"role": "assistant", "content": nil, "tool_calls": tcs})
		case 4, 5:
			id := fmt.Sprintf("c%d", call)
			if len(open) > 0 {
				id, open = open[0], open[1:]
			}
			msgs = append(msgs, map[string]any{"role": "tool", "tool_call_id": id, "content": strings.Repeat(fmt.Sprintf("line %d\n", i), size/7+1)})
		case 6:
			msgs = append(msgs, map[string]any{"role": "assistant", "content": strings.Repeat("a ", size/2+1)})
		case 7:
			msgs = append(msgs, map[string]any{"role": []string{"developer", "function", "weird"}[int(b)%3], "content": "x"})
		}
	}
	return msgs
}

// FuzzCondense: any message list, any mode — never a panic, never more
// tokens forwarded than received, and a valid conversation stays valid.
func FuzzCondense(f *testing.F) {
	f.Add([]byte{2, 4, 3, 4, 4, 0, 250, 252, 252, 6, 1}, uint8(0))
	f.Add([]byte{2, 4, 2, 4, 0, 3, 5, 5, 7}, uint8(1))
	f.Add([]byte{255, 255, 255, 2, 4, 2, 4, 2, 4}, uint8(2))
	modes := []string{ModeAuto, ModeFull, ModeSelective, ModeTruncate, ModeOff}
	e := newEngine(4000, nil, Options{Summarizer: "extractive", ChunkTokens: 300, SummaryBudgetTokens: 400, SelectiveEnabled: true, KeepRecentTurns: 1})
	f.Fuzz(func(t *testing.T, data []byte, mode uint8) {
		if len(data) > 300 {
			return
		}
		msgs := conversationFrom(data)
		body, _ := json.Marshal(map[string]any{"model": "m", "messages": msgs})
		var in struct {
			Messages []json.RawMessage `json:"messages"`
		}
		json.Unmarshal(body, &in)
		validIn := fakeupstream.Validate(in.Messages) == nil
		res, err := e.Condense(context.Background(), Request{Codec: chatCodec, Body: body, Mode: modes[int(mode)%len(modes)], Force: mode&8 != 0, Scope: "f"})
		if err != nil {
			t.Fatal(err)
		}
		if res.Report.TokensAfter > res.Report.TokensBefore {
			t.Fatalf("forwarded %d tokens, received %d", res.Report.TokensAfter, res.Report.TokensBefore)
		}
		var out struct {
			Messages []json.RawMessage `json:"messages"`
		}
		if err := json.Unmarshal(res.Body, &out); err != nil {
			t.Fatalf("output is not JSON: %v", err)
		}
		if validIn {
			if err := fakeupstream.Validate(out.Messages); err != nil {
				t.Fatalf("valid conversation made invalid (%s): %v", res.Report.Applied, err)
			}
		} else if string(res.Body) != string(body) {
			t.Fatal("an invalid conversation was rewritten")
		}
	})
}

// FuzzCondenseRaw feeds the engine raw bytes — duplicate keys, escaped
// keys, odd shapes, broken JSON —: never a panic; a body that is not JSON
// goes out untouched; a rewritten body is JSON, smaller, and keeps every
// other top-level field as a JSON decoder (last key wins) reads it, with a
// valid conversation where a valid one came in.
func FuzzCondenseRaw(f *testing.F) {
	long := strings.Repeat("output line\n", 400)
	conv := `[{"role":"system","content":"s"},{"role":"user","content":"task"},` +
		`{"role":"assistant","content":null,"tool_calls":[{"id":"a","type":"function","function":{"name":"bash","arguments":"{\"command\":\"ls\"}"}}]},` +
		`{"role":"tool","tool_call_id":"a","content":` + string(quoteJSON(long)) + `},{"role":"user","content":"next"}]`
	for _, seed := range []string{
		`{"model":"m","messages":` + conv + `}`,
		`{"model":"m","messages":[],"messages":` + conv + `}`,
		`{"model":"m","messages":` + conv + `,"messages":[{"role":"user","content":"x"}]}`,
		`{"model":"m","mess\u0061ges":` + conv + `}`,
		`{"model":"m","messages":` + conv + `,"model":"n","tools":[{"type":"function","function":{"name":"bash"}}]}`,
		`{"model":"m","messages":{"role":"user"}}`,
		`{"model":"m","messages":[1,"x",null,[]]}`,
		`{"messages":` + conv[:len(conv)/2],
		`[{"messages":` + conv + `}]`,
		"\xff\xfe{}",
	} {
		f.Add([]byte(seed), uint8(0))
		f.Add([]byte(seed), uint8(9))
	}
	modes := []string{ModeAuto, ModeFull, ModeSelective, ModeTruncate, ModeOff}
	e := newEngine(2000, nil, Options{Summarizer: "extractive", ChunkTokens: 200, SummaryBudgetTokens: 300, SelectiveEnabled: true, KeepRecentTurns: 1})
	f.Fuzz(func(t *testing.T, body []byte, mode uint8) {
		if len(body) > 1<<16 {
			return
		}
		in := append([]byte(nil), body...)
		res, err := e.Condense(context.Background(), Request{Codec: chatCodec, Body: in, Mode: modes[int(mode)%len(modes)], Force: mode&8 != 0, Scope: "f"})
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(in, body) {
			t.Fatal("the engine changed the body it was given")
		}
		if bytes.Equal(res.Body, body) {
			return
		}
		if !json.Valid(body) {
			t.Fatal("a body that is not JSON was rewritten")
		}
		if res.Report.TokensAfter >= res.Report.TokensBefore {
			t.Fatalf("rewritten to %d tokens from %d", res.Report.TokensAfter, res.Report.TokensBefore)
		}
		var before, after map[string]json.RawMessage
		if err := json.Unmarshal(body, &before); err != nil {
			t.Fatalf("input rewritten though it does not decode as an object: %v", err)
		}
		if err := json.Unmarshal(res.Body, &after); err != nil {
			t.Fatalf("output is not a JSON object: %v", err)
		}
		for k, v := range before {
			if k != "messages" && !bytes.Equal(after[k], v) {
				t.Fatalf("field %q changed: %s -> %s", k, v, after[k])
			}
		}
		var inMsgs, outMsgs []json.RawMessage
		if json.Unmarshal(before["messages"], &inMsgs) != nil {
			t.Fatal("rewritten though the decoded messages are not an array")
		}
		if err := json.Unmarshal(after["messages"], &outMsgs); err != nil {
			t.Fatalf("output messages: %v", err)
		}
		if fakeupstream.Validate(inMsgs) == nil {
			if err := fakeupstream.Validate(outMsgs); err != nil {
				t.Fatalf("a valid conversation became invalid: %v", err)
			}
		}
	})
}

func quoteJSON(s string) []byte {
	b, _ := json.Marshal(s)
	return b
}
