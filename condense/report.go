package condense

import (
	"slices"
	"strings"
)

// Change is one thing condensing replaced in a request, for the live page
// and the originals endpoint: a summary, a digest or a window marker.
type Change struct {
	// Kind is ChangeSummary, ChangeDigest or ChangeWindow.
	Kind string `json:"kind"`
	// ID names the originals (GET /v1/condense/originals/{id}).
	ID string `json:"id"`
	// Level of a summary (1: a chunk of messages; >1: merged summaries).
	Level int `json:"level,omitempty"`
	// From and To are the received items [From, To) replaced (summaries
	// and windows), or the item a digest was made in (To = From+1).
	From int `json:"from"`
	To   int `json:"to"`
	// Tool is the tool whose output a digest replaced.
	Tool string `json:"tool,omitempty"`
	// TokensBefore and TokensAfter: the replaced content and its
	// replacement.
	TokensBefore int `json:"tokens_before"`
	TokensAfter  int `json:"tokens_after"`
	// Text is the summary, digest or marker text as forwarded.
	Text string `json:"text"`
}

// Kinds of Change.
const (
	ChangeSummary = "summary"
	ChangeDigest  = "digest"
	ChangeWindow  = "window"
)

// ItemShape describes one item (message) of a request without its
// content: enough to draw a request's shape.
//
// Role is the item's role (view.Role*), or RoleStandIn for an item the
// engine inserted (a summary, a marker, a note).
type ItemShape struct {
	Role   string `json:"role"`
	Tokens int    `json:"tokens"`
}

// addDegraded appends a fallback's reason to the report, and its kind
// (Degraded*) to DegradedKinds.
func addDegraded(r *Report, kind, why string) {
	if r.Degraded == "" {
		r.Degraded = why
	} else if !strings.Contains(r.Degraded, why) {
		r.Degraded += "; " + why
	}
	if !slices.Contains(r.DegradedKinds, kind) {
		r.DegradedKinds = append(slices.Clip(r.DegradedKinds), kind)
	}
}

// RoleStandIn is the role of a forwarded item's shape that the engine
// inserted in place of condensed items.
const RoleStandIn = "stand-in"
