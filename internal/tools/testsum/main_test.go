package main

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestSummaryOfRecordedEvents: testdata/events.json is `go test -json
// ./...` of a small module (a passing, failing and skipping package, a
// subtest of each kind, a build failure, a package without tests).
func TestSummaryOfRecordedEvents(t *testing.T) {
	f, err := os.Open("testdata/events.json")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out bytes.Buffer
	s := newSummary(&out, false)
	if err := s.read(f); err != nil {
		t.Fatal(err)
	}
	s.close()
	got := out.String()
	lines := strings.Split(strings.TrimSuffix(got, "\n"), "\n")
	if last := lines[len(lines)-1]; last != "tests: 3 passed, 3 failed, 5 skipped" {
		t.Errorf("closing line %q\n%s", last, got)
	}
	for _, want := range []string{
		// failures with their output, as go test writes them
		"    a_test.go:8: got 3\n    a_test.go:9: want 4\n--- FAIL: TestFail",
		"--- FAIL: TestSub/bad",
		"    a_test.go:14: sub failed",
		"FAIL\texample.com/tsum/a\t",
		// the build error and the package lines
		"c/c_test.go:5:33: undefined: undefined",
		"FAIL\texample.com/tsum/c [build failed]",
		"ok  \texample.com/tsum/b\t",
		"?   \texample.com/tsum/d\t[no test files]",
		// the skipped groups: by package, by the message's first line
		"skipped:\n",
		"  example.com/tsum/a: 1 skipped: no corpus at ../shared/corpus\n",
		"  example.com/tsum/a: 1 skipped: no redis at 127.0.0.1:6379\n",
		"  example.com/tsum/b: 2 skipped: no corpus at ../shared/corpus\n",
		"  example.com/tsum/b: 1 skipped: (no message)\n",
		"build failed: example.com/tsum/c [example.com/tsum/c.test]\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
	for _, not := range []string{"=== RUN", "quiet", "PASS\n", "second line", "--- SKIP"} {
		if strings.Contains(got, not) {
			t.Errorf("output has %q:\n%s", not, got)
		}
	}
}

// TestExitStatusIsGoTests: testsum exits with go test's status, whatever
// the events said, and runs go test with -json and the arguments given.
func TestExitStatusIsGoTests(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("a shell script stands for go")
	}
	dir := t.TempDir()
	args := filepath.Join(dir, "args")
	script := "#!/bin/sh\necho \"$@\" > " + args + "\ncat " + filepath.Join(mustAbs(t, "testdata"), "events.json") + "\necho 'not an event'\nexit ${FAKE_GO_EXIT}\n"
	if err := os.WriteFile(filepath.Join(dir, "go"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	for _, code := range []string{"0", "1", "3"} {
		t.Setenv("FAKE_GO_EXIT", code)
		var out, errb bytes.Buffer
		got := run([]string{"-race", "-json", "-count=1", "./..."}, &out, &errb)
		if want := int(code[0] - '0'); got != want {
			t.Errorf("go test exited %d, testsum %d", want, got)
		}
		if !strings.Contains(out.String(), "not an event\n") || !strings.HasSuffix(out.String(), "tests: 3 passed, 3 failed, 5 skipped\n") {
			t.Errorf("output:\n%s", out.String())
		}
		a, _ := os.ReadFile(args)
		if string(a) != "test -json -race -count=1 ./...\n" {
			t.Errorf("go ran with %q", a)
		}
	}
}

func mustAbs(t *testing.T, p string) string {
	t.Helper()
	a, err := filepath.Abs(p)
	if err != nil {
		t.Fatal(err)
	}
	return a
}
