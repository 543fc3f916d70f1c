package view

// Asker is an optional capability of a Codec: a request that goes on from
// r's conversation with one more user message (text), asked for one
// answer of at most maxTokens that is not streamed. Every item of r before
// the new text stays byte for byte, and so do the fields a provider's
// prompt cache holds with them (system, tools): the request reads what the
// provider cached of r's conversation. Only the answer's bound and
// streaming change outside the items. ok is false, with no error, when r
// cannot be asked so: it continues state the upstream keeps, or forces a
// tool call or a form of answer.
//
// condense asks its summaries in place this way (condense/inplace.go).
type Asker interface {
	Ask(r *Request, text string, maxTokens int) (body []byte, ok bool, err error)
}

// ReasoningRoom is added to the answer's bound of a request that reasons
// (thinking, reasoning effort): its reasoning counts against the bound,
// and an answer cut off while still reasoning is empty.
const ReasoningRoom = 8192
