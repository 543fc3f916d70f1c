package condense

import "slices"

// Modes lists every mode a request can ask for, in the order the
// documentation gives them: the one list the configuration, the
// X-Condense-Mode header and the command line accept.
var Modes = []string{ModeAuto, ModeFull, ModeSelective, ModeTruncate, ModeOff, ModeObserve}

// ValidMode reports whether m is one of Modes (exactly: callers lower-case
// a header first).
func ValidMode(m string) bool { return slices.Contains(Modes, m) }
