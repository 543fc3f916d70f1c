package view

import "io"

// Meter is an optional capability of a Codec: it reads the upstream's
// answers to requests of its format — what keep-alive, and the proxy's
// measured usage, need of them — so that no other package parses an
// answer. Codecs are safe for concurrent use; an AnswerReader is not.
type Meter interface {
	// AnswerReader returns a reader of one answer: server-sent events
	// when sse (a Content-Type of text/event-stream), one JSON object
	// otherwise.
	AnswerReader(sse bool) AnswerReader
}

// AnswerReader reads one answer as its bytes arrive, holding a bounded
// amount of it (a JSON answer up to a few MiB, past which it is not
// understood; one SSE line up to a MiB, past which that event is
// skipped). Write never fails and never keeps b. Created per answer; not
// safe for concurrent use.
type AnswerReader interface {
	io.Writer
	// Outcome is what the answer said, as far as it was read. Call it
	// once the answer has ended.
	Outcome() Outcome
}

// Outcome is what an answer said of its turn and its cost.
type Outcome struct {
	// EndTurn: the model ended the agent's turn (Messages' end_turn, a
	// chat stop without tool calls, a Responses response completed
	// without calls for the client to run): the agent now waits for its
	// user, and an idle gap may follow.
	EndTurn bool
	// Failed: the answer carried an error (an error event, a failed or
	// incomplete response). A failed answer never ends the turn.
	Failed bool
	// ToolCall: the answer asks the client to run a tool.
	ToolCall bool
	// Usage is what the answer said it cost.
	Usage Usage
}

// Usage is what an answer says of its prompt and output, in tokens.
type Usage struct {
	// Known: the answer reported usage at all.
	Known bool
	// CacheRead and CacheWrite are the prompt tokens read from and
	// written to the provider's prompt cache; Uncached the rest of the
	// prompt. OpenAI-style usage that reports no writes leaves what was
	// not read Uncached (its cache is written at the input price).
	CacheRead, CacheWrite, Uncached int
	// CacheWrite1h is the share of CacheWrite written for an hour
	// (Anthropic's 1h cache, dearer than the 5-minute one); the rest of
	// CacheWrite is for 5 minutes, or of a lifetime the answer does not
	// say.
	CacheWrite1h int
	// Output is the answer's tokens (reasoning included).
	Output int
}

// Prompt is the prompt's size.
func (u Usage) Prompt() int { return u.CacheRead + u.CacheWrite + u.Uncached }
