package keepalive

import "testing"

// The answers' cases (end of turn, usage, bounds) are the codecs':
// codec/*/meter_test.go.

func TestReadMostly(t *testing.T) {
	cases := []struct {
		name string
		u    Usage
		want bool
	}{
		{"read", Usage{Known: true, CacheRead: 9000, Uncached: 10}, true},
		{"written", Usage{Known: true, CacheWrite: 9000, Uncached: 10}, false},
		{"not cached at all", Usage{Known: true, Uncached: 9000}, false},
		{"no usage", Usage{}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := readMostly(tc.u); got != tc.want {
				t.Errorf("readMostly(%+v) = %v", tc.u, got)
			}
		})
	}
}
