package eval

import (
	"context"
	"sync"

	"github.com/condense-proxy/condense-proxy/condense"
	"github.com/condense-proxy/condense-proxy/internal/replay"
	"github.com/condense-proxy/condense-proxy/memory"
	"github.com/condense-proxy/condense-proxy/proxy"
)

// conversationOf records the caller scope and conversation of the
// replayed session (a proxy.Recorder): a replay is one conversation of
// one caller, which the recall probes search the memory of.
type conversationOf struct {
	mu                  sync.Mutex
	scope, conversation string
}

func (c *conversationOf) Record(ev proxy.Event) {
	if ev.Report.Conversation == "" {
		return
	}
	c.mu.Lock()
	c.scope, c.conversation = ev.Scope, ev.Report.Conversation
	c.mu.Unlock()
}

func (c *conversationOf) get() (string, string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.scope, c.conversation
}

// recallProbe searches m, the memory the engine fed for the replayed
// conversation, as the recall tool answers a query (memory.Search, no
// embeddings): the texts of the steps among the best replay.RecallTop
// results. Nil when there is no memory.
func recallProbe(m *memory.Memory, conv *conversationOf) func(context.Context, string) []string {
	if m == nil {
		return nil
	}
	return func(ctx context.Context, query string) []string {
		scope, c := conv.get()
		if c == "" {
			return nil
		}
		var out []string
		for _, h := range m.Search(ctx, scope, c, query, replay.RecallTop, nil) {
			if h.Item.Kind == condense.MemoryStep {
				out = append(out, h.Item.Text)
			}
		}
		return out
	}
}
