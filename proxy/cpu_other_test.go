//go:build !unix

package proxy

import "time"

// processCPU is not measured here: the added-cpu-ms metric reads 0.
func processCPU() time.Duration { return 0 }
