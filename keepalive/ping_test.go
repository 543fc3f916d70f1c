package keepalive

import "testing"

// The pings' bodies are the codecs' (codec/*/ping_test.go).

func TestWorth(t *testing.T) {
	claude := Model{CacheRead: 0.1, CacheWrite: 1.25}
	gpt4o := Model{CacheRead: 0.5, CacheWrite: 1}
	cases := []struct {
		name   string
		m      Model
		prompt int
		out    int
		want   bool
	}{
		{"claude, one token", claude, 10000, 1, true},
		{"claude, a thinking budget dearer than the re-write", claude, 10000, 4096, false},
		{"claude, a thinking budget on a long prompt", claude, 100000, 4096, true},
		{"a read at half the price never pays", gpt4o, 100000, 1, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := worth(tc.m, tc.prompt, tc.out); got != tc.want {
				t.Errorf("worth = %v", got)
			}
		})
	}
}
