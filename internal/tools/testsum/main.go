// Command testsum runs `go test -json` with the arguments it is given and
// writes what `go test` would (failed tests with their output, build
// errors, each package's ok or FAIL line), then what it skipped, grouped
// by package and by the skip message's first line, and a closing line
//
//	tests: N passed, N failed, N skipped
//
// counting tests and subtests. Its exit status is go test's.
//
//	go run ./internal/tools/testsum -race -count=1 -timeout 30m ./...
//
// It is the test command README.md gives and .ci/run runs: a clean clone
// skips the agent and corpus tests, and the summary says so.
package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"sort"
	"strings"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run runs go test and returns its exit status (2 when it could not
// start).
func run(args []string, stdout, stderr io.Writer) int {
	verbose := false
	goArgs := []string{"test", "-json"}
	for _, a := range args {
		switch a {
		case "-json", "--json":
			continue
		case "-v", "--v", "-test.v":
			verbose = true
		}
		goArgs = append(goArgs, a)
	}
	cmd := exec.Command("go", goArgs...)
	cmd.Stderr = stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		fmt.Fprintln(stderr, "testsum:", err)
		return 2
	}
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(stderr, "testsum: starting go test:", err)
		return 2
	}
	s := newSummary(stdout, verbose)
	readErr := s.read(out)
	waitErr := cmd.Wait()
	s.close()
	if readErr != nil {
		fmt.Fprintln(stderr, "testsum: reading go test's events:", readErr)
	}
	var exit *exec.ExitError
	switch {
	case errors.As(waitErr, &exit):
		return exit.ExitCode()
	case waitErr != nil:
		fmt.Fprintln(stderr, "testsum:", waitErr)
		return 2
	case readErr != nil:
		return 2
	}
	return 0
}

// event is one line of `go test -json` (cmd/test2json).
type event struct {
	Action     string
	Package    string
	Test       string
	Output     string
	ImportPath string
}

type testKey struct{ pkg, test string }

// summary turns events into go test's usual output and counts them. Not
// safe for concurrent use.
type summary struct {
	w       io.Writer
	verbose bool
	out     map[testKey][]string // output of tests still running
	pkgOut  map[string][]string  // package-level output
	skips   map[string]map[string]int
	passed  int
	failed  int
	skipped int
	builds  []string // packages whose build failed
}

func newSummary(w io.Writer, verbose bool) *summary {
	return &summary{w: w, verbose: verbose, out: map[testKey][]string{}, pkgOut: map[string][]string{},
		skips: map[string]map[string]int{}}
}

// read consumes a stream of events; a line that is not an event is
// written as it is.
func (s *summary) read(r io.Reader) error {
	br := bufio.NewReaderSize(r, 64<<10)
	for {
		line, err := br.ReadString('\n')
		if line != "" {
			var e event
			if json.Unmarshal([]byte(line), &e) != nil || e.Action == "" {
				io.WriteString(s.w, line)
			} else {
				s.event(e)
			}
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

func (s *summary) event(e event) {
	switch e.Action {
	case "build-output":
		io.WriteString(s.w, e.Output)
		return
	case "build-fail":
		s.builds = append(s.builds, e.ImportPath)
		return
	}
	if e.Test == "" {
		s.packageEvent(e)
		return
	}
	k := testKey{e.Package, e.Test}
	switch e.Action {
	case "output":
		if s.verbose {
			io.WriteString(s.w, e.Output)
			return
		}
		s.out[k] = append(s.out[k], e.Output)
	case "pass":
		s.passed++
		delete(s.out, k)
	case "fail":
		s.failed++
		for _, l := range s.out[k] {
			if !strings.HasPrefix(l, "=== ") {
				io.WriteString(s.w, l)
			}
		}
		delete(s.out, k)
	case "skip":
		s.skipped++
		if s.skips[e.Package] == nil {
			s.skips[e.Package] = map[string]int{}
		}
		s.skips[e.Package][skipReason(s.out[k])]++
		delete(s.out, k)
	}
}

func (s *summary) packageEvent(e event) {
	switch e.Action {
	case "output":
		if s.verbose {
			io.WriteString(s.w, e.Output)
			return
		}
		s.pkgOut[e.Package] = append(s.pkgOut[e.Package], e.Output)
	case "pass", "skip":
		// go test prints a passing package's last line only.
		if lines := s.pkgOut[e.Package]; len(lines) > 0 && !s.verbose {
			io.WriteString(s.w, lines[len(lines)-1])
		}
		delete(s.pkgOut, e.Package)
	case "fail":
		// A failing package's own output: panics, timeouts, FAIL lines.
		for _, l := range s.pkgOut[e.Package] {
			if l != "PASS\n" {
				io.WriteString(s.w, l)
			}
		}
		delete(s.pkgOut, e.Package)
	}
}

// fileLine is the file:line: prefix testing puts before a message.
var fileLine = regexp.MustCompile(`^\s*[\w.-]+\.go:\d+: `)

// skipReason is the first line of a skipped test's message, its file and
// line dropped.
func skipReason(lines []string) string {
	for _, l := range lines {
		if strings.HasPrefix(l, "=== ") || strings.HasPrefix(l, "--- ") {
			continue
		}
		if r := strings.TrimSpace(fileLine.ReplaceAllString(l, "")); r != "" {
			return r
		}
	}
	return "(no message)"
}

// close writes the skipped groups and the closing line.
func (s *summary) close() {
	if len(s.skips) > 0 {
		fmt.Fprintln(s.w, "skipped:")
		pkgs := make([]string, 0, len(s.skips))
		for p := range s.skips {
			pkgs = append(pkgs, p)
		}
		sort.Strings(pkgs)
		for _, p := range pkgs {
			reasons := make([]string, 0, len(s.skips[p]))
			for r := range s.skips[p] {
				reasons = append(reasons, r)
			}
			sort.Strings(reasons)
			for _, r := range reasons {
				fmt.Fprintf(s.w, "  %s: %d skipped: %s\n", p, s.skips[p][r], r)
			}
		}
	}
	for _, b := range s.builds {
		fmt.Fprintf(s.w, "build failed: %s\n", b)
	}
	fmt.Fprintf(s.w, "tests: %d passed, %d failed, %d skipped\n", s.passed, s.failed, s.skipped)
}
