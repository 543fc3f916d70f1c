package scripted

import (
	"encoding/base64"
	"encoding/json"
	"strings"
	"time"
)

// The answers in each API's shape, as JSON and as server-sent events:
// the shapes of OpenAI's and Anthropic's API references, with the fields
// their SDKs, Claude Code and Codex read.

type obj = map[string]any

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // maps of strings and numbers only
	}
	return b
}

// pieces cuts s into about n pieces at spaces, as a model streams text.
func pieces(s string, n int) []string {
	if s == "" {
		return nil
	}
	words := strings.SplitAfter(s, " ")
	per := max(1, (len(words)+n-1)/n)
	var out []string
	for i := 0; i < len(words); i += per {
		out = append(out, strings.Join(words[i:min(i+per, len(words))], ""))
	}
	return out
}

// ---- chat completions

func chatFinish(a answer) string {
	if a.stopped() {
		return "stop"
	}
	return "tool_calls"
}

func chatUsage(a answer) obj {
	return obj{"prompt_tokens": a.inputTokens, "completion_tokens": a.outputTokens, "total_tokens": a.inputTokens + a.outputTokens,
		"prompt_tokens_details": obj{"cached_tokens": a.cacheRead}}
}

func chatJSON(a answer, now time.Time) []byte {
	msg := obj{"role": "assistant", "content": a.text, "refusal": nil}
	if a.call != nil {
		msg["tool_calls"] = []obj{{"id": a.call.id, "type": "function", "function": obj{"name": a.call.name, "arguments": a.call.args}}}
	}
	return mustJSON(obj{
		"id": "chatcmpl-" + a.id, "object": "chat.completion", "created": now.Unix(), "model": a.model,
		"choices": []obj{{"index": 0, "message": msg, "logprobs": nil, "finish_reason": chatFinish(a)}},
		"usage":   chatUsage(a),
	})
}

func chatSSE(s *sse, a answer, now time.Time, usage bool) {
	chunk := func(delta obj, finish any) {
		c := obj{"id": "chatcmpl-" + a.id, "object": "chat.completion.chunk", "created": now.Unix(), "model": a.model,
			"choices": []obj{{"index": 0, "delta": delta, "logprobs": nil, "finish_reason": finish}}}
		s.event("", mustJSON(c))
	}
	chunk(obj{"role": "assistant", "content": ""}, nil)
	for _, p := range pieces(a.text, 3) {
		chunk(obj{"content": p}, nil)
	}
	if c := a.call; c != nil {
		chunk(obj{"tool_calls": []obj{{"index": 0, "id": c.id, "type": "function", "function": obj{"name": c.name, "arguments": ""}}}}, nil)
		chunk(obj{"tool_calls": []obj{{"index": 0, "function": obj{"arguments": c.args}}}}, nil)
	}
	chunk(obj{}, chatFinish(a))
	if usage {
		s.event("", mustJSON(obj{"id": "chatcmpl-" + a.id, "object": "chat.completion.chunk", "created": now.Unix(),
			"model": a.model, "choices": []obj{}, "usage": chatUsage(a)}))
	}
	s.event("", []byte("[DONE]"))
}

// ---- Anthropic Messages

func messagesStop(a answer) string {
	if a.stopped() {
		return "end_turn"
	}
	return "tool_use"
}

func messagesUsage(a answer, output int) obj {
	// Anthropic's input_tokens is the rest, neither read nor written.
	return obj{"input_tokens": a.inputTokens - a.cacheRead - a.cacheWrite, "output_tokens": output,
		"cache_creation_input_tokens": a.cacheWrite, "cache_read_input_tokens": a.cacheRead}
}

func messagesContent(a answer) []obj {
	content := []obj{}
	if a.text != "" {
		content = append(content, obj{"type": "text", "text": a.text})
	}
	if c := a.call; c != nil {
		content = append(content, obj{"type": "tool_use", "id": c.id, "name": c.name, "input": json.RawMessage(c.args)})
	}
	return content
}

func messagesJSON(a answer) []byte {
	return mustJSON(obj{"id": "msg_" + a.id, "type": "message", "role": "assistant", "model": a.model,
		"content": messagesContent(a), "stop_reason": messagesStop(a), "stop_sequence": nil,
		"usage": messagesUsage(a, a.outputTokens)})
}

func messagesSSE(s *sse, a answer) {
	ev := func(name string, v obj) {
		v["type"] = name
		s.event(name, mustJSON(v))
	}
	ev("message_start", obj{"message": obj{"id": "msg_" + a.id, "type": "message", "role": "assistant", "model": a.model,
		"content": []obj{}, "stop_reason": nil, "stop_sequence": nil, "usage": messagesUsage(a, 1)}})
	ev("ping", obj{})
	index := 0
	if a.text != "" {
		ev("content_block_start", obj{"index": index, "content_block": obj{"type": "text", "text": ""}})
		for _, p := range pieces(a.text, 3) {
			ev("content_block_delta", obj{"index": index, "delta": obj{"type": "text_delta", "text": p}})
		}
		ev("content_block_stop", obj{"index": index})
		index++
	}
	if c := a.call; c != nil {
		ev("content_block_start", obj{"index": index, "content_block": obj{"type": "tool_use", "id": c.id, "name": c.name, "input": obj{}}})
		for _, p := range pieces(c.args, 2) {
			ev("content_block_delta", obj{"index": index, "delta": obj{"type": "input_json_delta", "partial_json": p}})
		}
		ev("content_block_stop", obj{"index": index})
	}
	ev("message_delta", obj{"delta": obj{"stop_reason": messagesStop(a), "stop_sequence": nil},
		"usage": obj{"output_tokens": a.outputTokens}})
	ev("message_stop", obj{})
}

// ---- OpenAI Responses

func responsesUsage(a answer) obj {
	return obj{"input_tokens": a.inputTokens, "input_tokens_details": obj{"cached_tokens": a.cacheRead},
		"output_tokens": a.outputTokens, "output_tokens_details": obj{"reasoning_tokens": 0},
		"total_tokens": a.inputTokens + a.outputTokens}
}

// responsesItems are the answer's output items, finished.
func responsesItems(a answer) []obj {
	var items []obj
	if a.compaction != "" {
		return []obj{{"id": "cmp_" + a.id, "type": "compaction",
			"encrypted_content": base64.StdEncoding.EncodeToString([]byte(a.compaction))}}
	}
	if a.text != "" {
		items = append(items, obj{"id": "msg_" + a.id, "type": "message", "status": "completed", "role": "assistant",
			"content": []obj{{"type": "output_text", "text": a.text, "annotations": []obj{}, "logprobs": []obj{}}}})
	}
	if c := a.call; c != nil {
		items = append(items, obj{"id": "fc_" + a.id, "type": "function_call", "status": "completed",
			"call_id": c.id, "name": c.name, "arguments": c.args})
	}
	return items
}

// response is the response object with the given status and output.
func response(a answer, now time.Time, status string, output []obj, usage any) obj {
	return obj{"id": "resp_" + a.id, "object": "response", "created_at": now.Unix(), "status": status,
		"model": a.model, "output": output, "usage": usage, "error": nil, "incomplete_details": nil,
		"instructions": nil, "metadata": obj{}, "parallel_tool_calls": true, "tool_choice": "auto",
		"tools": []obj{}, "temperature": 1.0, "top_p": 1.0, "text": obj{"format": obj{"type": "text"}}}
}

func responsesJSON(a answer, now time.Time) []byte {
	return mustJSON(response(a, now, "completed", responsesItems(a), responsesUsage(a)))
}

func responsesSSE(s *sse, a answer, now time.Time) {
	seq := 0
	ev := func(name string, v obj) {
		v["type"], v["sequence_number"] = name, seq
		seq++
		s.event(name, mustJSON(v))
	}
	ev("response.created", obj{"response": response(a, now, "in_progress", []obj{}, nil)})
	ev("response.in_progress", obj{"response": response(a, now, "in_progress", []obj{}, nil)})
	items := responsesItems(a)
	for i, it := range items {
		id := it["id"]
		switch it["type"] {
		case "message":
			ev("response.output_item.added", obj{"output_index": i, "item": obj{"id": id, "type": "message",
				"status": "in_progress", "role": "assistant", "content": []obj{}}})
			part := obj{"type": "output_text", "text": "", "annotations": []obj{}, "logprobs": []obj{}}
			ev("response.content_part.added", obj{"item_id": id, "output_index": i, "content_index": 0, "part": part})
			for _, p := range pieces(a.text, 3) {
				ev("response.output_text.delta", obj{"item_id": id, "output_index": i, "content_index": 0, "delta": p, "logprobs": []obj{}})
			}
			ev("response.output_text.done", obj{"item_id": id, "output_index": i, "content_index": 0, "text": a.text, "logprobs": []obj{}})
			done := obj{"type": "output_text", "text": a.text, "annotations": []obj{}, "logprobs": []obj{}}
			ev("response.content_part.done", obj{"item_id": id, "output_index": i, "content_index": 0, "part": done})
		case "function_call":
			ev("response.output_item.added", obj{"output_index": i, "item": obj{"id": id, "type": "function_call",
				"status": "in_progress", "call_id": it["call_id"], "name": it["name"], "arguments": ""}})
			for _, p := range pieces(a.call.args, 2) {
				ev("response.function_call_arguments.delta", obj{"item_id": id, "output_index": i, "delta": p})
			}
			ev("response.function_call_arguments.done", obj{"item_id": id, "output_index": i, "name": it["name"], "arguments": a.call.args})
		default: // compaction: no deltas
			ev("response.output_item.added", obj{"output_index": i, "item": it})
		}
		ev("response.output_item.done", obj{"output_index": i, "item": it})
	}
	ev("response.completed", obj{"response": response(a, now, "completed", items, responsesUsage(a))})
}

// ---- Gemini generateContent

func geminiUsage(a answer) obj {
	return obj{"promptTokenCount": a.inputTokens, "candidatesTokenCount": a.outputTokens,
		"totalTokenCount": a.inputTokens + a.outputTokens, "cachedContentTokenCount": a.cacheRead}
}

// geminiResponse is one GenerateContentResponse: parts, and the finish
// reason and usage when it ends the answer.
func geminiResponse(a answer, parts []obj, last bool) obj {
	cand := obj{"content": obj{"role": "model", "parts": parts}, "index": 0}
	resp := obj{"candidates": []obj{cand}, "modelVersion": a.model, "responseId": a.id}
	if last {
		cand["finishReason"] = "STOP"
		resp["usageMetadata"] = geminiUsage(a)
	}
	return resp
}

// geminiCall is the functionCall part of a's call.
func geminiCall(a answer) obj {
	return obj{"functionCall": obj{"id": a.call.id, "name": a.call.name, "args": json.RawMessage(a.call.args)}}
}

func geminiJSON(a answer) []byte {
	var parts []obj
	if a.text != "" {
		parts = append(parts, obj{"text": a.text})
	}
	if a.call != nil {
		parts = append(parts, geminiCall(a))
	}
	return mustJSON(geminiResponse(a, parts, true))
}

// geminiSSE streams a as Gemini does with alt=sse: data-only events, each
// a GenerateContentResponse; the text in pieces, the call whole, the last
// one with the finish reason and the usage.
func geminiSSE(s *sse, a answer) {
	ps := pieces(a.text, 3)
	for i, p := range ps {
		s.event("", mustJSON(geminiResponse(a, []obj{{"text": p}}, a.call == nil && i == len(ps)-1)))
	}
	if a.call != nil || len(ps) == 0 {
		parts := []obj{{"text": ""}}
		if a.call != nil {
			parts = []obj{geminiCall(a)}
		}
		s.event("", mustJSON(geminiResponse(a, parts, true)))
	}
}
