package view

import "errors"

// Pinger is an optional capability of a Codec: a request that reads (and
// so refreshes) the provider's prompt cache of a request of its format
// for the least it can cost. Package keepalive sends it.
type Pinger interface {
	// Ping returns body with only what makes it cheap changed: the
	// answer's bound at the API's minimum, not streamed; every byte the
	// provider caches stays. out is the most output tokens the ping may
	// cost: more than the minimum when the request thinks (its thinking
	// budget must stay as it was, or the cached prefix is lost, and the
	// bound must exceed it). reasoning: the model reasons (its bound is
	// the reasoning form of the field where the format has two). It
	// returns ErrNoPing for a body no ping can be made of.
	Ping(body []byte, reasoning bool) (ping []byte, out int, err error)
}

// ErrNoPing is a body a ping cannot be made of.
var ErrNoPing = errors.New("not a request a ping can be made of")
