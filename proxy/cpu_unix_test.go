//go:build unix

package proxy

import (
	"syscall"
	"time"
)

// processCPU is the CPU time the process has used so far (all threads:
// client, proxies, upstream and the garbage collector). The pass-through
// benchmarks send one request at a time, so the CPU time used while one
// is sent is that request's cost, whatever else the machine runs: on a
// busy machine the wall-clock medians say how long a request waited, this
// says how much work it was.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
