package config

// When condensing starts, by default: a model of a large window condenses
// from 60% of it, a smaller one from 80%. A condensation re-writes the
// prompt cache from its first edit; what repays it is the reads it saves
// on the requests that follow, and a large window holds many requests
// between 60% and its end (at 128k tokens, 40 or more of an agent's
// steps), so starting there halves nothing but the bill. A small window
// holds few: at 32k tokens an agent's step is a tenth of it, a
// condensation at 60% is soon followed by another, and the later start
// bills less (BENCHMARKS.md, "When condensing starts").
const (
	// LargeWindow is the window, in tokens, from which a model condenses
	// from LargeWindowThreshold by default.
	LargeWindow = 64_000
	// LargeWindowThreshold and SmallWindowThreshold are the default
	// thresholds of models of a large and of a small window.
	LargeWindowThreshold = 0.6
	SmallWindowThreshold = 0.8
	// maxDefaultTarget is the default target's ceiling: below it, the
	// target is 5/8 of the threshold (0.8's ratio to 0.5).
	maxDefaultTarget = 0.5
	// minFraction is the least threshold or target that may be set.
	minFraction = 0.01
)

// DefaultThreshold is condense.threshold's default for a model whose
// context window is window tokens.
func DefaultThreshold(window int) float64 {
	if window >= LargeWindow {
		return LargeWindowThreshold
	}
	return SmallWindowThreshold
}

// ThresholdFor is the threshold of a model whose context window is
// window tokens: threshold (condense.threshold or the model's entry's)
// when set, else DefaultThreshold.
func ThresholdFor(threshold float64, window int) float64 {
	if threshold > 0 {
		return threshold
	}
	return DefaultThreshold(window)
}

// DefaultTarget is condense.target's default for a model whose threshold
// is threshold: 5/8 of it, at most 0.5.
func DefaultTarget(threshold float64) float64 {
	return min(maxDefaultTarget, threshold*5/8)
}

// TargetFor is the target of a model whose threshold is threshold:
// condense.target when set (target, non-zero), else DefaultTarget.
func TargetFor(target, threshold float64) float64 {
	if target > 0 {
		return target
	}
	return DefaultTarget(threshold)
}
