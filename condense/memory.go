package condense

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	"github.com/condense-proxy/condense-proxy/selective"
)

// Conversation memory. Every step condensing takes out of a request (into
// a summary, behind a window marker, or whose tool output a digest
// replaced) and every summary it renders (each level) is handed to the
// Memory, with its text, under the caller's scope and the conversation
// (Report.Conversation): the recall tool and the relevant-context block
// search it (package memory). The engine only reports what it made; what
// is kept, for how long and how it is searched is the Memory's.

// Memory keeps what condensing took out of a conversation. Implementations
// must be safe for concurrent use and must not block for long (the engine
// calls Add on the request's path).
type Memory interface {
	// Add keeps items under the caller's scope and conversation. Items
	// may repeat (the same step under another summary): the Memory merges
	// them by ID.
	Add(ctx context.Context, scope, conversation string, items []MemoryItem)
	// RelevantContext renders the steps of the conversation's memory
	// that end at or before item q.Before and best match q.Focus,
	// within q.Budget tokens, as a block naming their ids; "" when none
	// matches.
	RelevantContext(ctx context.Context, q RelevantQuery) string
}

// RelevantQuery asks a Memory for the relevant-context block of one cut.
type RelevantQuery struct {
	// Scope and Conversation name the memory searched.
	Scope, Conversation string
	// Focus is what the conversation is about now (focusOf).
	Focus string
	// Before: only steps ending at or before this received item (those
	// condensed away, not still in the request).
	Before int
	// Budget bounds the block, in tokens.
	Budget int
	// Known is what the note the block goes into already says (its
	// summaries): lines it holds are not repeated.
	Known string
	// Creds are the caller's own, for the Memory's calls (embeddings);
	// never kept.
	Creds http.Header
}

// Kinds of MemoryItem.
const (
	MemoryStep    = "step"
	MemorySummary = "summary"
)

// MemoryItem is one thing a conversation's memory holds.
type MemoryItem struct {
	// ID names the item: a step's is the content hash of its items (as
	// ids of originals are), a summary's the id its block carries.
	ID string `json:"id"`
	// Kind is MemoryStep or MemorySummary.
	Kind string `json:"kind"`
	// Level of a summary (1: steps; >1: summaries merged).
	Level int `json:"level,omitempty"`
	// Refs are the ids of the summaries, window markers and digests that
	// stand for this step in condensed requests: a recall by one of
	// those ids returns the steps naming it.
	Refs []string `json:"refs,omitempty"`
	// From and To are the received items [From, To) the item covers.
	From int `json:"from"`
	To   int `json:"to"`
	// Text is the step as plain text (tool calls and results included,
	// whole: not a digest), or the summary's text.
	Text string `json:"text"`
}

// maxMemoryStepBytes bounds one step's text (its middle is cut).
const maxMemoryStepBytes = 32 << 10

// memoryConversation is the conversation id memory items go under: the
// one reports carry.
func (rq *job) memoryConversation() string { return conversationID(rq.received().req) }

// rememberRange hands the steps of the received items [from, to) to the
// memory, each naming ref (the summary, marker or digest that stands for
// them). A range is handed over once per replica while its ref is
// remembered (the originals' recent set), like the originals.
func (e *Engine) rememberRange(ctx context.Context, rq *job, ref string, from, to int) {
	if e.memory == nil || !rq.keeps() || rq.req.observing {
		return
	}
	if !e.written.add("mem:"+rq.req.Scope+":"+ref, e.now()) {
		return
	}
	c := rq.received()
	var items []MemoryItem
	for _, s := range c.steps {
		if s.first < from || s.end > to || s.first >= s.end {
			continue
		}
		items = append(items, MemoryItem{ID: c.hashMessages(s.first, s.end), Kind: MemoryStep, Refs: []string{ref},
			From: s.first, To: s.end, Text: memoryText(c, s.first, s.end)})
	}
	if len(items) > 0 {
		e.memory.Add(context.WithoutCancel(ctx), rq.req.Scope, rq.memoryConversation(), items)
	}
}

// rememberSummary hands one rendered summary to the memory (once per
// replica while remembered).
func (e *Engine) rememberSummary(ctx context.Context, rq *job, it summaryItem) {
	if e.memory == nil || !rq.keeps() || rq.req.observing || it.text == "" {
		return
	}
	if !e.written.add("mem:sum:"+rq.req.Scope+":"+it.id+":"+textHash(it.text), e.now()) {
		return
	}
	e.memory.Add(context.WithoutCancel(ctx), rq.req.Scope, rq.memoryConversation(), []MemoryItem{{
		ID: it.id, Kind: MemorySummary, Level: it.level, From: it.from, To: it.to, Text: strings.TrimSpace(it.text)}})
}

// rememberDigests hands the steps whose tool outputs were digested to the
// memory, each naming its digest's id.
func (e *Engine) rememberDigests(ctx context.Context, rq *job, made []selective.Made) {
	if e.memory == nil {
		return
	}
	c := rq.received()
	for _, d := range made {
		for _, s := range c.steps {
			if s.first <= d.Item && d.Item < s.end {
				e.rememberRange(ctx, rq, d.ID, s.first, s.end)
				break
			}
		}
	}
}

// memoryText renders items [from, to) as plain text: what was said, each
// call with its arguments and each result whole (up to
// maxMemoryStepBytes for the step, its middle cut).
func memoryText(c *conversation, from, to int) string {
	var b strings.Builder
	for i := from; i < to; i++ {
		t := c.codec.Text(c.req, i)
		for _, r := range t.Results {
			fmt.Fprintf(&b, "[tool result]\n%s\n", r.Text)
		}
		if strings.TrimSpace(t.Text) != "" {
			fmt.Fprintf(&b, "[%s]\n%s\n", t.Role, t.Text)
		}
		for _, call := range t.Calls {
			fmt.Fprintf(&b, "[tool call] %s(%s)\n", call.Name, call.Args)
		}
	}
	s := strings.TrimSpace(b.String())
	if len(s) > maxMemoryStepBytes {
		half := maxMemoryStepBytes / 2
		s = s[:half] + fmt.Sprintf("\n[… %d bytes omitted …]\n", len(s)-maxMemoryStepBytes) + s[len(s)-half:]
	}
	return strings.ToValidUTF8(s, "")
}

// Relevant earlier context (Options.RelevantTokens). When a condensed
// request's cut is made, the steps of the memory most relevant to the
// conversation's focus — its latest user message and newest tool calls —
// are put in the note that stands for what was cut (the summaries, or
// the window's marker), within RelevantTokens. The block is made once per
// cut, where its note is anchored (the note's ids), and kept in the cache
// (set-if-absent: every replica replays the first one): the note, and so
// the request's prefix, changes only when the cut moves.

// relevantTokens is the room the block takes in a condensed request (0:
// none; counting requests reserve it too, so they count what is sent).
func (e *Engine) relevantTokens() int {
	if e.memory == nil {
		return 0
	}
	return e.opts.RelevantTokens
}

// relevantBlock returns the block for the note anchored at anchor (the
// ids it names), standing for items before rest: made once, replayed
// after. known is what the note says besides (its summaries): the block
// does not repeat it.
func (e *Engine) relevantBlock(ctx context.Context, rq *job, anchor string, rest int, known string) string {
	if e.relevantTokens() == 0 || rq.req.observing {
		return ""
	}
	conv := rq.memoryConversation()
	key := "rel:" + rq.req.Scope + ":" + conv + ":" + textHash(anchor)
	if v, ok := e.getCache(ctx, key); ok {
		return strings.TrimPrefix(string(v), "-")
	}
	block := e.memory.RelevantContext(ctx, RelevantQuery{Scope: rq.req.Scope, Conversation: conv, Focus: focusOf(rq.received()),
		Before: rest, Budget: e.opts.RelevantTokens, Known: known, Creds: rq.req.Credentials})
	if block != "" {
		block = "\n" + block
	}
	if !rq.keeps() {
		return block
	}
	// "-" marks a block made empty (an absent key is not one).
	return strings.TrimPrefix(e.addCache(ctx, key, "-"+block), "-")
}

// summaryAnchor is what anchors a summary note: its summaries' ids.
func summaryAnchor(items []summaryItem) string {
	ids := make([]string, len(items))
	for i, it := range items {
		ids[i] = it.id
	}
	return strings.Join(ids, ",")
}

// focusOf is what the conversation is about now: its latest user message
// (not a tool result) and the calls of its newest steps.
func focusOf(c *conversation) string {
	var parts []string
	for i := c.len() - 1; i >= c.head; i-- {
		if c.role(i) == "user" {
			if t := c.codec.Text(c.req, i); strings.TrimSpace(t.Text) != "" && len(t.Results) == 0 {
				parts = append(parts, t.Text)
				break
			}
		}
	}
	calls := 0
	for i := c.len() - 1; i >= c.head && calls < 4; i-- {
		for _, call := range c.req.Items[i].Calls {
			parts = append(parts, call.Name+" "+call.Args)
			calls++
		}
	}
	return strings.Join(parts, "\n")
}
