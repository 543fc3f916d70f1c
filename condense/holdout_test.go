package condense

import (
	"bytes"
	"context"
	"fmt"
	"testing"
)

// holdoutSession is session(seed, n) with a task of its own, so that each
// seed is a conversation of its own (the task is part of the head).
func holdoutSession(seed int64, n int) []map[string]any {
	msgs := session(seed, n)
	msgs[1]["content"] = fmt.Sprintf("Task %d: fix the failing test TestParseDuration in pkg/timeparse.", seed)
	return msgs
}

// TestHoldoutArm: with a holdout share of 0.5, about half of 40
// conversations are forwarded byte for byte — reported as observe mode
// reports, with what their mode would have done and the bill of what
// went — and the rest condensed; the arm is a conversation's for good (a
// later request, another engine on another cache, a count-only request
// all agree), and a holdout conversation's prefix log is of the requests
// as received.
func TestHoldoutArm(t *testing.T) {
	ctx := context.Background()
	opts := Options{Summarizer: "extractive", SelectiveEnabled: true, HoldoutShare: 0.5}
	e, other := newEngine(16000, nil, opts), newEngine(16000, nil, opts)
	holdout := 0
	for seed := int64(1); seed <= 40; seed++ {
		msgs := holdoutSession(seed, 60)
		arm := ""
		for turn, steps := range []int{50, 60} {
			b := body(t, holdoutSession(seed, steps)) // the first a prefix of the second
			sent := bytes.Clone(b)
			res, err := e.Condense(ctx, Request{Codec: chatCodec, Body: b, Mode: ModeFull, Scope: "team"})
			if err != nil {
				t.Fatal(err)
			}
			r := res.Report
			if turn == 0 {
				arm = r.Arm
			} else if r.Arm != arm {
				t.Fatalf("conversation %d: arm %q, then %q", seed, arm, r.Arm)
			}
			switch r.Arm {
			case ArmHoldout:
				if !bytes.Equal(res.Body, sent) || r.Applied != AppliedObserve || r.TokensAfter != r.TokensBefore {
					t.Fatalf("conversation %d: holdout not forwarded as received (applied %q, %d → %d tokens)", seed, r.Applied, r.TokensBefore, r.TokensAfter)
				}
				if r.WouldApply != AppliedFull || r.WouldTokensAfter >= r.TokensBefore || r.WouldBill <= 0 {
					t.Fatalf("conversation %d: would apply %q, %d tokens, bill %v: not what full would have done (%s)", seed, r.WouldApply, r.WouldTokensAfter, r.WouldBill, r.Reason)
				}
				if turn == 1 && (r.PrefixReused <= 0 || r.CacheRead <= 0 || r.Bill != r.BillUncondensed) {
					t.Fatalf("conversation %d: prefix %d, cache read %d, bill %v vs %v uncondensed: the prefix log is not of the requests as received",
						seed, r.PrefixReused, r.CacheRead, r.Bill, r.BillUncondensed)
				}
				cres, err := e.Condense(ctx, Request{Codec: chatCodec, Body: b, Mode: ModeFull, Scope: "team", CountOnly: true})
				if err != nil || !bytes.Equal(cres.Body, sent) || cres.Report.Arm != ArmHoldout {
					t.Fatalf("conversation %d: a count-only request of the holdout arm is not counted as received (%v, arm %q)", seed, err, cres.Report.Arm)
				}
			case ArmCondensed:
				if r.Applied == AppliedNone || r.Applied == AppliedObserve || len(res.Body) >= len(sent) {
					t.Fatalf("conversation %d: condensed arm not condensed (applied %q: %s)", seed, r.Applied, r.Reason)
				}
			default:
				t.Fatalf("conversation %d: arm %q", seed, r.Arm)
			}
		}
		if arm == ArmHoldout {
			holdout++
		}
		ores, err := other.Condense(ctx, Request{Codec: chatCodec, Body: body(t, msgs), Mode: ModeFull, Scope: "team"})
		if err != nil || ores.Report.Arm != arm {
			t.Fatalf("conversation %d: arm %q on one engine, %q on another (%v)", seed, arm, ores.Report.Arm, err)
		}
	}
	if holdout < 10 || holdout > 30 {
		t.Errorf("%d of 40 conversations in the holdout arm at share 0.5", holdout)
	}
}

// TestHoldoutArmOnlyWhenCondensing: no share, no arm; a request asking
// for off or observe takes no part; share 1 holds every conversation out.
func TestHoldoutArmOnlyWhenCondensing(t *testing.T) {
	ctx := context.Background()
	b := body(t, holdoutSession(7, 60))
	for _, tc := range []struct {
		share float64
		mode  string
		arm   string
	}{
		{0, ModeAuto, ""},
		{1, ModeOff, ""},
		{1, ModeObserve, ""},
		{1, ModeAuto, ArmHoldout},
		{1, ModeTruncate, ArmHoldout},
	} {
		e := newEngine(16000, nil, Options{Summarizer: "extractive", SelectiveEnabled: true, HoldoutShare: tc.share})
		res, err := e.Condense(ctx, Request{Codec: chatCodec, Body: b, Mode: tc.mode, Scope: "s"})
		if err != nil {
			t.Fatal(err)
		}
		if res.Report.Arm != tc.arm {
			t.Errorf("share %v, mode %s: arm %q, want %q", tc.share, tc.mode, res.Report.Arm, tc.arm)
		}
		if tc.arm == ArmHoldout && !bytes.Equal(res.Body, b) {
			t.Errorf("share %v, mode %s: not forwarded as received", tc.share, tc.mode)
		}
	}
}

// TestInHoldoutShare: the hash spreads conversations evenly, so a share
// holds out about that share of them; it depends on the scope too.
func TestInHoldoutShare(t *testing.T) {
	n, differ := 0, 0
	for i := range 10000 {
		conv := fmt.Sprintf("%016x", i*7919)
		if inHoldout(0.2, "a", conv) {
			n++
		}
		if inHoldout(0.5, "a", conv) != inHoldout(0.5, "b", conv) {
			differ++
		}
	}
	if n < 1800 || n > 2200 {
		t.Errorf("%d of 10000 held out at 0.2", n)
	}
	if differ < 4000 || differ > 6000 {
		t.Errorf("the arm of %d of 10000 conversations differs between two scopes; want about half", differ)
	}
}
