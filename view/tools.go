package view

// Tools the proxy answers itself. A codec that implements Tools lets the
// proxy add a function tool to a request of its format (condense_recall),
// recognize calls of it in the model's answer — a JSON answer or a stream
// of server-sent events — and append the model's turn and the results to
// the request to ask again. The proxy never learns a format's field
// names: what a tool, a call, a result and an event look like is the
// codec's.

// Tool is a function tool the proxy adds to requests.
type Tool struct {
	Name        string
	Description string
	// Schema is the JSON schema of the arguments, JSON text.
	Schema string
}

// ToolCall is one tool call of a model's answer.
type ToolCall struct {
	ID   string
	Name string
	// Args is the arguments, JSON text.
	Args string
}

// ToolResult answers one call.
type ToolResult struct {
	CallID string
	Text   string
}

// Answer is a model's answer as a codec read it.
type Answer struct {
	// Calls are the answer's tool calls, in order.
	Calls []ToolCall
	// Turn is the answer as an item (or items) of the codec's format, for
	// AppendTurn; codec-private.
	Turn any
}

// EventKind is what one server-sent event of an answer is to the proxy.
type EventKind int

// Kinds of events.
const (
	// EventPass: content (or anything else) to send the agent.
	EventPass EventKind = iota
	// EventCall: a tool call begins here (Answer().Calls has it, with
	// its name). The proxy holds this event and every later one of the
	// answer until the answer ends.
	EventCall
	// EventDrop: nothing the agent must see (the opening events of a
	// later round, which continues the answer the agent is receiving).
	EventDrop
)

// Tools is an optional capability of a Codec. Codecs are safe for
// concurrent use; an AnswerStream is used by one goroutine.
type Tools interface {
	// AddTool returns body with t appended to its tools (the same bytes
	// every time, so the request's prefix stays stable); ok is false,
	// and body is returned as it was, when the request must not get it
	// (it forbids tools, or continues state the upstream keeps).
	AddTool(body []byte, t Tool) (out []byte, ok bool, err error)
	// ReadAnswer reads a (non-streamed) answer.
	ReadAnswer(answer []byte) (Answer, error)
	// AppendTurn returns request body with the model's turn a appended —
	// its text and reasoning, and only the calls keep accepts (i is the
	// call's index in a.Calls) — then the results of those calls.
	AppendTurn(body []byte, a Answer, keep func(i int, c ToolCall) bool, results []ToolResult) ([]byte, error)
	// DropCalls returns a (non-streamed) answer without the calls drop
	// accepts, in every alternative the answer holds (a last resort: the
	// model kept calling a tool the proxy stopped answering); its final
	// state (a finish or stop reason) says no call is left when none is.
	DropCalls(answer []byte, drop func(ToolCall) bool) ([]byte, error)
	// Stream returns a reader of an answer streamed as server-sent
	// events. Events that restate the whole answer (a Responses
	// response.completed) leave out calls of proxyTool, which the agent
	// never sees.
	Stream(proxyTool string) AnswerStream
}

// Held is an event of an answer the proxy held (from the answer's first
// call on): the bytes Event returned for it, and the index in
// Answer().Calls of the call it belongs to (-1: none).
type Held struct {
	Event []byte
	Call  int
}

// AnswerStream reads a streamed answer event by event, and rewrites the
// events of later rounds so that they continue the answer the agent
// receives. The proxy's contract: the events before an answer's first
// call are sent; from the first call on, they are held until the answer
// ends and then either sent (Release), or dropped (the answer's calls
// were answered by the proxy and the upstream asked again: Next).
type AnswerStream interface {
	// Event reads one event (its lines, without the blank line that ends
	// it) and returns what it is, the bytes to send in its place (the
	// blank line included), and the index in Answer().Calls of the call
	// it belongs to (-1: none).
	Event(ev []byte) (kind EventKind, out []byte, call int)
	// Answer returns the current round's answer as read so far.
	Answer() Answer
	// Next starts the next round: the upstream's next answer continues
	// the one the agent receives.
	Next()
	// KeepAlive returns an event that keeps the stream alive while the
	// proxy answers a call (a comment, or the format's ping).
	KeepAlive() []byte
	// Release returns the held events of the current round, read to its
	// end, as the agent gets them: the calls drop accepts (i is the
	// call's index in Answer().Calls) taken out — their events left out,
	// the items after them numbered on without a gap — and the answer's
	// final state (chat's finish_reason, Messages' stop_reason, a
	// Responses output) saying what is left: no tool call when none is.
	// Nothing dropped: the events as held.
	Release(held []Held, drop func(i int, c ToolCall) bool) []byte
}
