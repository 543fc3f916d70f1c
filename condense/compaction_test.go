package condense

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	"github.com/condense-proxy/condense-proxy/internal/fakeupstream"
)

// TestAgentCompactionLinksTheNextConversation: the prefix bookkeeping
// records an agent's compaction request, and the caller's next request of
// a new conversation (the agent's new history) is compared with it rather
// than counted as never seen; only once.
func TestAgentCompactionLinksTheNextConversation(t *testing.T) {
	e := newEngine(128000, nil, Options{Summarizer: "extractive"})
	msgs := session(3, 6)
	compaction := append(append([]map[string]any{}, msgs...), map[string]any{"role": "user",
		"content": "Summarize the conversation so far, as described in the prompt instructions."})
	restart := []map[string]any{msgs[0], {"role": "user", "content": "Summary of the earlier work: read the files."}, {"role": "user", "content": "Go on."}}
	other := []map[string]any{msgs[0], {"role": "user", "content": "An unrelated task."}}
	steps := []struct {
		name      string
		body      []byte
		scope     string
		agent     string
		reusedNew bool // PrefixReused >= 0
	}{
		{"the conversation", body(t, msgs), "a", "", false},
		{"its compaction request", body(t, compaction), "a", "roo-code", true},
		{"another caller's new conversation", body(t, other), "b", "", false},
		{"the agent's new history", body(t, restart), "a", "", true},
		{"a second new conversation", body(t, other), "a", "", false},
	}
	for _, s := range steps {
		res, err := e.Condense(context.Background(), Request{Codec: chatCodec, Body: s.body, Mode: ModeAuto, Scope: s.scope})
		if err != nil {
			t.Fatal(err)
		}
		r := res.Report
		if r.AgentCompaction != s.agent {
			t.Errorf("%s: agent compaction %q, want %q", s.name, r.AgentCompaction, s.agent)
		}
		if (r.PrefixReused >= 0) != s.reusedNew {
			t.Errorf("%s: prefix reused %d", s.name, r.PrefixReused)
		}
		if s.agent != "" && !bytes.Equal(res.Body, s.body) {
			t.Errorf("%s: changed", s.name)
		}
	}
}

// TestAgentCompactionOverTheWindowFits: an agent's own compaction request
// that its digests cannot bring within the window — here a fifth of it —
// is forwarded within the window all the same, in every format: the
// oldest steps cut, an extractive stand-in in their place, the head and
// the agent's compaction instruction verbatim, and the request valid for
// its API.
func TestAgentCompactionOverTheWindowFits(t *testing.T) {
	const prompt = "Your task is to create a detailed summary of the conversation so far, paying close attention to the user's explicit requests."
	for _, f := range replicaForms(t) {
		t.Run(f.name, func(t *testing.T) {
			b, err := f.req(f.turns - 1)
			if err != nil {
				t.Fatal(err)
			}
			var path string
			var msg map[string]any
			switch f.name {
			case "chat":
				path, msg = "messages.-1", map[string]any{"role": "user", "content": prompt}
			case "responses":
				path, msg = "input.-1", map[string]any{"type": "message", "role": "user", "content": []map[string]any{{"type": "input_text", "text": prompt}}}
			case "messages":
				path, msg = "messages.-1", map[string]any{"role": "user", "content": []map[string]any{{"type": "text", "text": prompt}}}
				if gjson.GetBytes(b, "messages.@reverse.0.role").String() == "user" {
					msg = nil // the last user message takes the prompt, as Claude Code sends it
				}
			}
			if msg == nil {
				n := gjson.GetBytes(b, "messages.#").Int()
				b, err = sjson.SetBytes(b, fmt.Sprintf("messages.%d.content.-1", n-1), map[string]any{"type": "text", "text": prompt})
			} else {
				b, err = sjson.SetBytes(b, path, msg)
			}
			if err != nil {
				t.Fatal(err)
			}
			probe, err := newEngine(10_000_000, nil, Options{}).Condense(context.Background(), Request{Codec: f.codec, Body: b, Mode: ModeOff, Scope: "p"})
			if err != nil {
				t.Fatal(err)
			}
			window := probe.Report.TokensBefore / 5
			e := newEngine(window, nil, Options{SelectiveEnabled: true})
			res, err := e.Condense(context.Background(), Request{Codec: f.codec, Body: b, Mode: ModeAuto, Scope: "s"})
			if err != nil {
				t.Fatal(err)
			}
			r := res.Report
			if r.AgentCompaction != "claude-code" {
				t.Fatalf("not taken for an agent compaction: %q", r.Reason)
			}
			if r.TokensAfter > window {
				t.Fatalf("forwarded %d tokens to a window of %d (%s)", r.TokensAfter, window, r.Reason)
			}
			if !bytes.Contains(res.Body, []byte(prompt)) {
				t.Error("the compaction instruction is not forwarded")
			}
			if !r.DegradedBy(DegradedCompactionDigested) || !r.Took(PathCut) {
				t.Errorf("the report does not say the compaction request was cut: path %v, degraded %v", r.Path, r.DegradedKinds)
			}
			switch f.name {
			case "chat":
				validate(t, res.Body)
			case "responses":
				if e := fakeupstream.ValidateResponses(res.Body, fakeupstream.DefaultSigner); e != nil {
					t.Fatalf("rejected: %v", e)
				}
			case "messages":
				if e := fakeupstream.ValidateMessages(res.Body, fakeupstream.DefaultSigner, false); e != nil {
					t.Fatalf("rejected: %v", e)
				}
			}
		})
	}
}

// TestAgentCompactionWithNothingToDigestFits: the same with no tool
// output at all (a conversation of long messages): the cut alone.
func TestAgentCompactionWithNothingToDigestFits(t *testing.T) {
	msgs := []map[string]any{{"role": "system", "content": "You are a coding agent."}, {"role": "user", "content": "Plan the parser rewrite."}}
	for i := 0; i < 30; i++ {
		msgs = append(msgs, map[string]any{"role": "assistant", "content": strings.Repeat(fmt.Sprintf("Part %d of the plan: the lexer keeps its tokens. ", i), 150)},
			map[string]any{"role": "user", "content": fmt.Sprintf("Go on with part %d.", i+1)})
	}
	msgs = append(msgs, map[string]any{"role": "user", "content": "Summarize the conversation so far, as described in the prompt instructions."})
	b := body(t, msgs)
	e := newEngine(8000, nil, Options{SelectiveEnabled: true})
	res, err := e.Condense(context.Background(), Request{Codec: chatCodec, Body: b, Mode: ModeAuto, Scope: "s"})
	if err != nil {
		t.Fatal(err)
	}
	r := res.Report
	if r.AgentCompaction != "roo-code" || r.TokensBefore <= 8000 {
		t.Fatalf("premise: compaction %q, %d tokens", r.AgentCompaction, r.TokensBefore)
	}
	if r.TokensAfter > 8000 {
		t.Fatalf("forwarded %d tokens to a window of 8000 (%s)", r.TokensAfter, r.Reason)
	}
	validate(t, res.Body)
	if !bytes.Contains(res.Body, []byte("Plan the parser rewrite.")) || !bytes.Contains(res.Body, []byte("as described in the prompt instructions")) {
		t.Error("the head or the instruction is gone")
	}
}
