package condense

import "slices"

// Why a request was or was not condensed, as data. Report.Reason and
// Report.Degraded tell it in prose for people (the log line, the
// X-Condense headers); Report.Path and Report.DegradedKinds say the same
// with a closed vocabulary, for the code and the tests that read it: one
// step in Path for each decision the Reason tells, in its order, and one
// kind in DegradedKinds for each fallback Degraded tells.

// Steps of Report.Path.
const (
	// The request is not one the engine condenses.
	PathNoCodec    = "no_codec"    // no codec for the request
	PathNotRequest = "not_request" // not a request of its codec's format

	// Forwarded as received by the caller's choice.
	PathHoldout = "holdout"  // the holdout arm (condense.holdout_share); in observe's run, what the arm would have had follows
	PathObserve = "observe"  // observe mode; what auto would have done follows
	PathModeOff = "mode_off" // mode off

	// The agent's own compaction request (compaction.go).
	PathAgentCompaction = "agent_compaction"
	PathWithinWindow    = "within_window" // it fits the context window
	PathOverWindow      = "over_window"   // it does not

	// Why it was to be condensed, or not.
	PathUntouchable     = "untouchable" // the codec marks it untouchable (view.Request.Untouchable)
	PathUnderThreshold  = "under_threshold"
	PathEagerDigests    = "eager_digests" // under the threshold, selective.eager digests
	PathOverThreshold   = "over_threshold"
	PathOverMaxMessages = "over_max_messages"
	PathForced          = "forced"
	PathCold            = "cold" // idle past the cache's lifetime (cold.go)

	// How it was condensed.
	PathDigests             = "digests"               // tool outputs digested
	PathInputsShortened     = "inputs_shortened"      // tool inputs shortened
	PathAutoFolds           = "auto_folds"            // auto folds this conversation: priced below the digests
	PathAutoSwitch          = "auto_switch"           // auto's fold would move: the digests and the cut from here
	PathWindowNow           = "window_now"            // the digests would not pay before the window: the window now
	PathCut                 = "cut"                   // the oldest steps cut, stand-ins in their place
	PathExtractiveAllowance = "extractive_allowance"  // auto's stand-ins extractive: LLM ones over its allowance (condense.auto_llm_share)
	PathNoChunk             = "no_chunk"              // no complete chunk to summarize
	PathSummariesOverTarget = "summaries_over_target" // the fold's summaries left it over the target
	PathRecentStepsCut      = "recent_steps_cut"      // verbatim steps after the summary cut, extractive summaries in their place
	PathAllVerbatim         = "all_verbatim"          // every step is needed verbatim: no window

	// Why it went as received after all.
	PathInvalid            = "invalid"           // its conversation does not parse
	PathFailed             = "failed"            // condensing failed (the prose quotes the error)
	PathNothingCondensed   = "nothing_condensed" // nothing to condense
	PathNotShrunk          = "not_shrunk"        // condensing did not shrink it
	PathForwardedUnchanged = "forwarded_unchanged"
)

// Kinds of Report.DegradedKinds: the fallbacks used.
const (
	DegradedUntouchable         = "untouchable"          // over the threshold (or forced) and untouchable: not condensed
	DegradedSelectiveDisabled   = "selective_disabled"   // selective asked, selective.enabled=false: full used
	DegradedTooLarge            = "too_large"            // too large for the window, or to condense at all
	DegradedWindow              = "window"               // the sliding window used: the asked strategy was not enough
	DegradedRecentOverBudget    = "recent_over_budget"   // older verbatim steps after the summary omitted
	DegradedNewestOverBudget    = "newest_over_budget"   // the newest steps' tool outputs digested
	DegradedSummarizerFailed    = "summarizer_failed"    // a summarizer call failed: extractive used
	DegradedSummarizerSuspended = "summarizer_suspended" // the summarizer recently failing: extractive used
	DegradedBusy                = "summarizer_busy"      // no place for a summarizer call: extractive used
	DegradedMaxWait             = "max_wait"             // condense.max_wait reached: extractive used
	DegradedCallBudget          = "call_budget"          // condense.max_summarizer_calls: extractive used
	DegradedCompactionKept      = "compaction_unchanged" // an agent compaction over the window forwarded as received
	DegradedCompactionDigested  = "compaction_digested"  // an agent compaction over the window digested (and cut) to fit
)

// pathSteps and degradedKinds are the vocabularies, in order (kinds_test.go
// checks they list every constant).
var (
	pathSteps = []string{
		PathNoCodec, PathNotRequest, PathHoldout, PathObserve, PathModeOff,
		PathAgentCompaction, PathWithinWindow, PathOverWindow,
		PathUntouchable, PathUnderThreshold, PathEagerDigests, PathOverThreshold, PathOverMaxMessages, PathForced, PathCold,
		PathDigests, PathInputsShortened, PathAutoFolds, PathAutoSwitch, PathWindowNow, PathCut, PathExtractiveAllowance,
		PathNoChunk, PathSummariesOverTarget, PathRecentStepsCut, PathAllVerbatim,
		PathInvalid, PathFailed, PathNothingCondensed, PathNotShrunk, PathForwardedUnchanged,
	}
	degradedKinds = []string{
		DegradedUntouchable, DegradedSelectiveDisabled, DegradedTooLarge, DegradedWindow,
		DegradedRecentOverBudget, DegradedNewestOverBudget,
		DegradedSummarizerFailed, DegradedSummarizerSuspended, DegradedBusy, DegradedMaxWait, DegradedCallBudget,
		DegradedCompactionKept, DegradedCompactionDigested,
	}
)

// Took reports whether the request took step p (Path).
func (r *Report) Took(p string) bool { return slices.Contains(r.Path, p) }

// DegradedBy reports whether fallback k was used (DegradedKinds).
func (r *Report) DegradedBy(k string) bool { return slices.Contains(r.DegradedKinds, k) }

// addReason appends text to the report's Reason and the steps it tells
// to its Path. It never writes into the path's array: a path saved to be
// restored stays as it was.
func addReason(r *Report, text string, steps ...string) {
	r.Reason += text
	r.Path = append(slices.Clip(r.Path), steps...)
}

// degradation is a fallback: its kind (Degraded*) and its prose.
type degradation struct {
	kind, why string
}

// reportHook, when set, is handed every report Condense returns: the
// package's tests check each against the vocabularies (main_test.go).
var reportHook func(*Report)
