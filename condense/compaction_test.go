package condense

import (
	"bytes"
	"context"
	"testing"
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
