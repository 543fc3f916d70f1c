package responses

import (
	"github.com/tidwall/gjson"

	"github.com/condense-proxy/condense-proxy/jsonscan"
	"github.com/condense-proxy/condense-proxy/view"
)

var _ view.Sniffer = (*Codec)(nil)

// Sniff implements view.Sniffer: an input (an array, or a string for a
// single turn) and no messages.
func (*Codec) Sniff(body []byte) bool {
	obj, ok := jsonscan.ScanObject(body, "input")
	if _, msgs := obj.Get("messages"); msgs {
		return false
	}
	return ok && obj.Array[1] > 0 || singleTurn(body)
}

// singleTurn reports whether body's input is a string: one turn, nothing
// to condense.
func singleTurn(body []byte) bool { return gjson.GetBytes(body, "input").Type == gjson.String }
