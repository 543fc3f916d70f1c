package config

import "testing"

// TestThresholdByWindow: unset, condense.threshold is each model's by
// its window — a gateway's window too — and the target follows it;
// set, globally or for one model, it is taken as written.
func TestThresholdByWindow(t *testing.T) {
	c, err := Load(flags(t, "--config", writeFile(t, "models:\n  - match: \"small*\"\n    context_window: 32000\n  - match: \"mid*\"\n    context_window: 64000\n  - match: \"own*\"\n    context_window: 200000\n    threshold: 0.4\n")), withUpstream())
	if err != nil {
		t.Fatalf("a model's threshold under the default target, target unset: %v", err)
	}
	r := NewRegistry(c, nil)
	r.SetGateway([]GatewayModel{{Alias: "gw-big", ContextWindow: 100000}, {Alias: "gw-small", ContextWindow: 16000}})
	for _, tc := range []struct {
		model           string
		thr, wantTarget float64
	}{
		{"small-1", 0.8, 0.5},
		{"mid-1", 0.6, 0.375},
		{"claude-sonnet-4-5", 0.6, 0.375}, // built in, 200k
		{"gpt-4", 0.8, 0.5},               // built in, 8k
		{"own-1", 0.4, 0.25},
		{"gw-big", 0.6, 0.375},
		{"gw-small", 0.8, 0.5},
	} {
		mi := r.Lookup(tc.model)
		if mi.Threshold != tc.thr || TargetFor(c.Condense.Target, mi.Threshold) != tc.wantTarget {
			t.Errorf("%s (window %d): threshold %g, target %g; want %g, %g", tc.model, mi.ContextWindow, mi.Threshold,
				TargetFor(c.Condense.Target, mi.Threshold), tc.thr, tc.wantTarget)
		}
	}
	c, err = Load(flags(t, "--threshold", "0.7"), withUpstream())
	if err != nil {
		t.Fatal(err)
	}
	r = NewRegistry(c, nil)
	for _, m := range []string{"gpt-4", "claude-sonnet-4-5"} {
		if mi := r.Lookup(m); mi.Threshold != 0.7 || TargetFor(c.Condense.Target, mi.Threshold) != 0.4375 {
			t.Errorf("%s with --threshold 0.7: threshold %g, target %g", m, mi.Threshold, TargetFor(c.Condense.Target, mi.Threshold))
		}
	}
	c, err = Load(flags(t, "--target", "0.3"), withUpstream())
	if err != nil {
		t.Fatal(err)
	}
	if got := TargetFor(c.Condense.Target, NewRegistry(c, nil).Lookup("gpt-4").Threshold); got != 0.3 {
		t.Errorf("--target 0.3: a model's target %g", got)
	}
}

// TestModelTargetFollowsItsThreshold: with condense.threshold set and
// condense.target not, a model whose entry sets a lower threshold gets a
// target below its own (5/8 of it) — not the one that follows the global
// threshold, which a threshold of 0.3 under 0.7's 0.4375 used to be
// refused for.
func TestModelTargetFollowsItsThreshold(t *testing.T) {
	yaml := "upstream: http://127.0.0.1:1\ncondense:\n  threshold: 0.7\nmodels:\n  - match: \"tiny*\"\n    context_window: 16000\n    threshold: 0.3\n"
	c, err := Load(flags(t, "--config", writeFile(t, yaml)), nil)
	if err != nil {
		t.Fatalf("refused: %v", err)
	}
	reg := NewRegistry(c, nil)
	for _, tc := range []struct {
		model                 string
		threshold, wantTarget float64
	}{{"tiny-1", 0.3, 0.1875}, {"gpt-4o", 0.7, 0.4375}} {
		mi := reg.Lookup(tc.model)
		if got := TargetFor(c.Condense.Target, mi.Threshold); mi.Threshold != tc.threshold || got != tc.wantTarget {
			t.Errorf("%s: threshold %g, target %g; want %g, %g", tc.model, mi.Threshold, got, tc.threshold, tc.wantTarget)
		}
	}
}
