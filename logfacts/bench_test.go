package logfacts

import (
	"fmt"
	"strings"
	"testing"
)

// BenchmarkKeyLines reads 1 MB outputs built to be slow: one line,
// identical lines, distinct error lines.
func BenchmarkKeyLines(b *testing.B) {
	var distinct strings.Builder
	for i := 0; distinct.Len() < 1<<20; i++ {
		fmt.Fprintf(&distinct, "2026-11-28 ERROR worker-%d failed to connect: connection refused\n", i)
	}
	for name, s := range map[string]string{
		"oneline":  strings.Repeat("abcd efgh ", 1<<20/10),
		"repeated": strings.Repeat("2026-11-28T04:43:26Z INFO worker-3 heartbeat ok queue=17 latency=3ms\n", 1<<20/70),
		"errors":   distinct.String(),
	} {
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(s)))
			for i := 0; i < b.N; i++ {
				KeyLines(s, 4)
				Exit(s)
			}
		})
	}
}
