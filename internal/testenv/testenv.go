// Package testenv answers what the tests need to know of where they run.
package testenv

import (
	"os"
	"strings"
)

// InCI reports whether the tests run in continuous integration: CI set
// to anything but "", "0" or "false" (any case), as CI services set it
// ("true", "1", "yes"). There, a test missing what it needs (Redis
// binaries, Chromium, the corpus, the agents) fails instead of skipping.
func InCI() bool {
	switch strings.ToLower(strings.TrimSpace(os.Getenv("CI"))) {
	case "", "0", "false":
		return false
	}
	return true
}
