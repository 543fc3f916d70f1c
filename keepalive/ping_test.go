package keepalive

import "testing"

// The pings' bodies are the codecs' (codec/*/ping_test.go).

func TestPingsWorth(t *testing.T) {
	claude := Model{CacheRead: 0.1, CacheWrite: 1.25}
	gpt4o := Model{CacheRead: 0.5, CacheWrite: 1}
	// A model whose engine condenses cold turns over 100k to 20k, and one
	// to 5k.
	cold := Model{CacheRead: 0.1, CacheWrite: 1.25, ColdAbove: 100000, ColdTo: 20000}
	tiny := Model{CacheRead: 0.1, CacheWrite: 1.25, ColdAbove: 100000, ColdTo: 5000}
	cases := []struct {
		name              string
		m                 Model
		prompt, next, out int
		want              int
	}{
		// 10000 × 1.15 = 11500 added going cold; a ping 1000 + 5.
		{"claude, one token", claude, 10000, 10000, 1, 11},
		{"claude, a thinking budget dearer than the re-write", claude, 10000, 10000, 4096, 0},
		// 115000 against 10000 + 20480.
		{"claude, a thinking budget on a long prompt", claude, 100000, 100000, 4096, 3},
		// 115000 against 10000 + 32768: the model's output price, not Claude's.
		{"output priced 8×: fewer pings", Model{CacheRead: 0.1, CacheWrite: 1.25, OutputPrice: 8}, 100000, 100000, 4096, 2},
		{"a read at half the price never pays", gpt4o, 100000, 100000, 1, 0},
		{"the next turn under the cold threshold: as if not condensed", cold, 95000, 99000, 1, 11},
		// 20000 × 1.25 − 9500 = 15500 against 9505.
		{"the next turn over it: a cold turn writes 20k, one ping", cold, 95000, 105000, 1, 1},
		{"a cold turn writing less than one ping reads: none", tiny, 95000, 105000, 1, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := pingsWorth(tc.m, tc.prompt, tc.next, tc.out)
			if got != tc.want {
				t.Errorf("pingsWorth = %d, want %d", got, tc.want)
			}
			// The rule: n pings cost less than going cold adds, n+1 do not.
			ping := float64(tc.prompt)*tc.m.CacheRead + float64(tc.out)*tc.m.outputPrice()
			written := tc.prompt
			if tc.m.ColdTo > 0 && tc.next > tc.m.ColdAbove {
				written = min(written, tc.m.ColdTo)
			}
			extra := float64(written)*tc.m.CacheWrite - float64(tc.prompt)*tc.m.CacheRead
			if float64(got)*ping >= extra && got > 0 || float64(got+1)*ping < extra {
				t.Errorf("%d pings of %g against %g added going cold", got, ping, extra)
			}
		})
	}
}
