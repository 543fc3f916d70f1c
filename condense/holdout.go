package condense

import "github.com/cespare/xxhash/v2"

// The holdout arm (Options.HoldoutShare): a fixed share of conversations
// goes upstream byte for byte, so that what condensing saves can be
// measured against conversations it never touched. Which conversations
// is decided by a hash of the caller's scope and the conversation's
// identity, nothing else: every replica and every restart puts a
// conversation in the same arm, and a conversation never changes arm.
//
// A holdout conversation is observe mode per conversation (observe.go):
// each request is forwarded as received, its bill estimated from the
// conversation's real prefix log (what was really forwarded), and the
// mode asked for is run on the side, without a summarizer call and in
// observe's namespace, for what it would have forwarded (Would*). Its
// report says Applied "observe" and Arm ArmHoldout; the other
// conversations' reports say Arm ArmCondensed. Requests asking for off
// or observe take no part: they have no arm.

// Arms of Report.Arm.
const (
	// ArmCondensed: the conversation is condensed as its mode says.
	ArmCondensed = "condensed"
	// ArmHoldout: the conversation is forwarded as received.
	ArmHoldout = "holdout"
)

// holdoutSalt keeps the arm's hash apart from every other use of the same
// strings.
const holdoutSalt = "condense-proxy holdout arm\x00"

// inHoldout reports whether conversation conv of the caller with scope
// falls in the holdout arm at share (in [0, 1]): the hash of both, as a
// fraction of its range, is below share. Pure: the same answer on every
// replica and after restarts.
func inHoldout(share float64, scope, conv string) bool {
	if !(share > 0) {
		return false
	}
	if share >= 1 {
		return true
	}
	h := xxhash.New()
	h.WriteString(holdoutSalt)
	h.WriteString(scope)
	h.Write([]byte{0})
	h.WriteString(conv)
	// The top 53 bits, as a fraction in [0, 1).
	f := float64(h.Sum64()>>11) / (1 << 53)
	return f < share
}

// armOf returns the arm of a request in mode of conversation conv ("":
// none — no holdout share, or a mode that does not condense).
func (e *Engine) armOf(req Request, mode, conv string) string {
	if e.opts.HoldoutShare <= 0 || req.observing || mode == ModeOff || mode == ModeObserve {
		return ""
	}
	if inHoldout(e.opts.HoldoutShare, req.Scope, conv) {
		return ArmHoldout
	}
	return ArmCondensed
}
