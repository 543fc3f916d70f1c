package agents

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"time"
)

// Result is how an agent run ended.
type Result struct {
	Stdout, Stderr string
	// Err is nil when the agent exited 0; ErrTimeout when ctx ended first;
	// otherwise the exit error.
	Err      error
	Duration time.Duration
}

// Run runs cmd (stdin from /dev/null) until it exits or ctx ends, in which
// case the agent and every process it started are killed and Err is
// ErrTimeout.
func Run(ctx context.Context, cmd *exec.Cmd) Result {
	var out, errb bytes.Buffer
	cmd.Stdin = nil // the null device
	cmd.Stdout, cmd.Stderr = &out, &errb
	ownGroup(cmd)
	t0 := time.Now()
	if err := cmd.Start(); err != nil {
		return Result{Err: fmt.Errorf("starting %s: %w", cmd.Path, err)}
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var err error
	select {
	case err = <-done:
	case <-ctx.Done():
		killGroup(cmd)
		<-done
		err = ErrTimeout
	}
	return Result{Stdout: out.String(), Stderr: errb.String(), Err: err, Duration: time.Since(t0)}
}
