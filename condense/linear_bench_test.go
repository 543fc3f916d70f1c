package condense

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/condense-proxy/condense-proxy/cache"
	"github.com/condense-proxy/condense-proxy/codec/chat"
	messagescodec "github.com/condense-proxy/condense-proxy/codec/messages"
	"github.com/condense-proxy/condense-proxy/codec/responses"
	"github.com/condense-proxy/condense-proxy/tokenizer"
	"github.com/condense-proxy/condense-proxy/view"
)

// A pathological conversation, written in each wire format by the
// builders below: what an attacker (or a runaway tool) can send.
type pathoStep struct {
	role string // "user", "assistant" (text) or "tool" (a call and its output)
	text string
}

// pathoShapes are the three pathological bodies of about size bytes:
// repeated — an old tool output of identical log lines; oneline — an old
// tool output of one line, no newline; tiny — many messages of a few
// tokens. Each ends with a few small tool calls and a user prompt, so the
// big output is old.
func pathoShapes(size int) map[string][]pathoStep {
	tail := func(steps []pathoStep) []pathoStep {
		for i := 0; i < 8; i++ {
			steps = append(steps, pathoStep{"assistant", fmt.Sprintf("Step %d: checking.", i)},
				pathoStep{"tool", fmt.Sprintf("ok %d\n", i)})
		}
		return append(steps, pathoStep{"user", "Now summarize what the log says."})
	}
	head := []pathoStep{{"user", "Why does the service restart?"}, {"assistant", "Reading the log."}}
	line := "2026-11-28T04:43:26Z INFO worker-3 heartbeat ok queue=17 latency=3ms\n"
	repeated := strings.Repeat(line, size/len(line))
	oneline := strings.Repeat("abcd efgh ", size/10)
	var tiny []pathoStep
	tiny = append(tiny, head...)
	for i := 0; len(tiny)*40 < size; i++ {
		tiny = append(tiny, pathoStep{"user", fmt.Sprintf("ping %d", i)}, pathoStep{"assistant", "pong"})
	}
	return map[string][]pathoStep{
		"repeated": tail(append(append([]pathoStep{}, head...), pathoStep{"tool", repeated})),
		"oneline":  tail(append(append([]pathoStep{}, head...), pathoStep{"tool", oneline})),
		"tiny":     tail(tiny),
	}
}

// pathoFormats writes steps as a request of each wire format.
var pathoFormats = []struct {
	name  string
	codec func(*tokenizer.Counter) view.Codec
	body  func(steps []pathoStep) []byte
}{
	{"chat", func(c *tokenizer.Counter) view.Codec { return chat.New(c) }, pathoChat},
	{"messages", func(c *tokenizer.Counter) view.Codec { return messagescodec.New(c) }, pathoMessages},
	{"responses", func(c *tokenizer.Counter) view.Codec { return responses.New(c) }, pathoResponses},
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

func pathoChat(steps []pathoStep) []byte {
	msgs := []map[string]any{{"role": "system", "content": "You are a coding agent."}}
	for i, s := range steps {
		switch s.role {
		case "tool":
			id := fmt.Sprintf("call_%d", i)
			msgs = append(msgs, map[string]any{"role": "assistant", "content": nil, "tool_calls": []map[string]any{{"id": id, "type": "function",
				"function": map[string]any{"name": "bash", "arguments": `{"command":"cat service.log"}`}}}},
				map[string]any{"role": "tool", "tool_call_id": id, "content": s.text})
		default:
			msgs = append(msgs, map[string]any{"role": s.role, "content": s.text})
		}
	}
	return mustJSON(map[string]any{"model": "gpt-4o", "messages": msgs})
}

func pathoMessages(steps []pathoStep) []byte {
	var msgs []map[string]any
	for i, s := range steps {
		switch s.role {
		case "tool":
			id := fmt.Sprintf("toolu_%d", i)
			msgs = append(msgs, map[string]any{"role": "assistant", "content": []map[string]any{{"type": "tool_use", "id": id, "name": "bash",
				"input": map[string]any{"command": "cat service.log"}}}},
				map[string]any{"role": "user", "content": []map[string]any{{"type": "tool_result", "tool_use_id": id, "content": s.text}}})
		default:
			msgs = append(msgs, map[string]any{"role": s.role, "content": s.text})
		}
	}
	return mustJSON(map[string]any{"model": "claude-sonnet-4-5", "max_tokens": 4096, "system": "You are a coding agent.", "messages": msgs})
}

func pathoResponses(steps []pathoStep) []byte {
	var items []map[string]any
	for i, s := range steps {
		switch s.role {
		case "tool":
			id := fmt.Sprintf("call_%d", i)
			items = append(items, map[string]any{"type": "function_call", "call_id": id, "name": "bash", "arguments": `{"command":"cat service.log"}`},
				map[string]any{"type": "function_call_output", "call_id": id, "output": s.text})
		default:
			items = append(items, map[string]any{"type": "message", "role": s.role, "content": s.text})
		}
	}
	return mustJSON(map[string]any{"model": "gpt-4o", "instructions": "You are a coding agent.", "input": items})
}

// BenchmarkPathological condenses each pathological body in each format,
// through the engine as the proxy builds it (condense.New, auto mode,
// selective on, a memory cache; extractive summaries, so the time is the
// engine's own), each iteration a new engine and a new token counter
// (nothing cached: a first request). ms/MB is what one MB of the body costs: at most 20 whatever
// the content.
func BenchmarkPathological(b *testing.B) {
	for _, size := range []int{4 << 20, 16 << 20} {
		shapes := pathoShapes(size)
		for _, f := range pathoFormats {
			for _, shape := range []string{"repeated", "oneline", "tiny"} {
				body := f.body(shapes[shape])
				b.Run(fmt.Sprintf("%s/%s/%dMB", f.name, shape, size>>20), func(b *testing.B) {
					b.SetBytes(int64(len(body)))
					b.ReportAllocs()
					var total, cpu time.Duration
					var rep Report
					for i := 0; i < b.N; i++ {
						cnt := tokenizer.New(tokenizer.Options{})
						e := New(Deps{Counter: cnt, Models: limits(128000), Cache: cache.NewMemory(256 << 20)},
							Options{SelectiveEnabled: true, Summarizer: "extractive"})
						t0, c0 := time.Now(), cpuTime()
						res, err := e.Condense(context.Background(), Request{Codec: f.codec(cnt), Body: body, Scope: "s"})
						total += time.Since(t0)
						cpu += cpuTime() - c0
						if err != nil {
							b.Fatal(err)
						}
						rep = res.Report
					}
					mb := float64(len(body)) / (1 << 20)
					b.ReportMetric(float64(total.Microseconds())/1000/float64(b.N)/mb, "ms/MB")
					b.ReportMetric(float64(cpu.Microseconds())/1000/float64(b.N)/mb, "cpu-ms/MB")
					if !rep.Counted {
						b.Fatalf("not counted: %s", rep.Reason)
					}
				})
			}
		}
	}
}

// cpuTime is the CPU time the process has used (user and system).
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
