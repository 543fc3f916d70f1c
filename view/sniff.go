package view

import "fmt"

// Sniffer is an optional capability of a Codec: whether a body has what
// only requests of its format have, for a body no route names (the
// offline command's file). A body no codec claims is taken for chat
// completions, the format every gateway speaks.
type Sniffer interface {
	Sniff(body []byte) bool
}

// ErrSingleTurn is returned by Scan for a request of the codec's format
// that holds no conversation, only one turn (a Responses request whose
// input is a string): nothing to condense. It is an ErrNotRequest too:
// such a request is forwarded untouched.
var ErrSingleTurn = fmt.Errorf("%w: a single turn", ErrNotRequest)
