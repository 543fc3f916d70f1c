package testenv

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Unraced runs the calling test in a test binary of its package built
// without the race detector, when the running binary has it, and reports
// whether it did: the caller then returns, its verdict being the other
// binary's (its output is logged). It is for long sequential replays
// whose verdict does not depend on timing — the bill suite's gates, whole
// sessions through the proxy —: the detector makes them five to eight
// times slower (CI's run went past its 20 minutes), and the concurrent
// tests, which stay under it, exercise the same code with the goroutines
// these replays hardly use. A binary without the detector (go test
// without -race) runs the test itself: false.
func Unraced(t *testing.T) bool {
	t.Helper()
	if !Race || os.Getenv(unracedEnv) != "" {
		return false // in place: never recurse
	}
	ctx := context.Background()
	if d, ok := t.Deadline(); ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, d.Add(-10*time.Second))
		defer cancel()
	}
	out, err := buildUnraced(ctx, t.TempDir())
	if err == nil {
		out, err = runUnraced(ctx, out, t.Name())
	}
	for _, line := range strings.Split(strings.TrimRight(out, "\n"), "\n") {
		t.Log(line)
	}
	switch {
	case errors.Is(err, errSkipped):
		t.Skip("skipped without -race")
	case err != nil:
		t.Fatal(err)
	}
	return true
}

var errSkipped = errors.New("skipped")

// unracedEnv is set for the binary Unraced runs: there the test runs in
// place, whatever that binary was built with, so Unraced never recurses.
const unracedEnv = "CONDENSE_TEST_UNRACED"

// buildUnraced builds into dir the test binary of the package in the
// working directory (go test runs a package's tests in its folder)
// without the race detector and returns its path, or the go command's
// output and an error. The go command's build cache makes every build
// after a package's first a link.
func buildUnraced(ctx context.Context, dir string) (string, error) {
	bin := filepath.Join(dir, "pkg.test")
	build := exec.CommandContext(ctx, "go", "test", "-c", "-o", bin, ".")
	build.Env = append(os.Environ(), "GOFLAGS="+withoutRace(os.Getenv("GOFLAGS")))
	if out, err := build.CombinedOutput(); err != nil {
		return string(out), fmt.Errorf("building the test binary without -race: %w", err)
	}
	return bin, nil
}

// runUnraced runs test name of the test binary bin and returns its
// output: an error unless that test ran and passed (errSkipped when it
// skipped).
func runUnraced(ctx context.Context, bin, name string) (string, error) {
	var buf bytes.Buffer
	cmd := exec.CommandContext(ctx, bin, "-test.run", "^"+name+"$", "-test.v", "-test.count=1", "-test.timeout=25m")
	cmd.Stdout, cmd.Stderr = &buf, &buf
	cmd.Env = append(os.Environ(), unracedEnv+"=1")
	err := cmd.Run()
	out := buf.String()
	switch {
	case strings.Contains(out, "--- SKIP: "+name+" "):
		return out, errSkipped
	case err != nil:
		return out, fmt.Errorf("%s without -race: %w", name, err)
	case !strings.Contains(out, "--- PASS: "+name+" "):
		return out, fmt.Errorf("%s without -race: did not run", name)
	}
	return out, nil
}

// withoutRace returns goflags (GOFLAGS) without its -race flag.
func withoutRace(goflags string) string {
	var kept []string
	for _, f := range strings.Fields(goflags) {
		switch strings.TrimLeft(f, "-") {
		case "race", "race=true", "race=1":
			continue
		}
		kept = append(kept, f)
	}
	return strings.Join(kept, " ")
}
