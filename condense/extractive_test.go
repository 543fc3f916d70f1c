package condense

import (
	"strings"
	"testing"
)

func TestResultDigest(t *testing.T) {
	tests := []struct {
		name, in string
		want     []string
		not      []string
	}{
		{"mini-swe-agent output", "<returncode>1</returncode>\n<output>\nTraceback (most recent call last):\n  File \"x.py\", line 3\nValueError: bad value\n</output>",
			[]string{"Traceback", "exit 1", "ValueError: bad value"}, []string{"</output>"}},
		{"paths with error in the name are not errors", "/a/0007_alter_validators_add_error_messages.py\n/b/errors_test.go\nok",
			[]string{"/a/0007_alter_validators_add_error_messages.py", "(3 lines)"}, []string{"! /b/errors_test.go"}},
		{"go test failure", "=== RUN TestA\n--- FAIL: TestA (0.00s)\n    a_test.go:12: got 1\nFAIL\nexit status 1",
			[]string{"--- FAIL: TestA", "exit 1"}, nil},
		{"assertion lines carry no error word", "=== RUN   TestStore\n--- PASS: TestOther (0.00s)\n--- FAIL: TestStore (0.00s)\n    store_test.go:42: got 3 want 4\nFAIL\nexit status 1",
			[]string{"--- FAIL: TestStore", "store_test.go:42: got 3 want 4", "exit 1"}, nil},
		{"pytest", "collected 3 items\n\ntests/test_x.py F..\n\nE       assert 3 == 4\ntests/test_x.py:7: AssertionError\nFAILED tests/test_x.py::test_sum - assert 3 == 4",
			[]string{"E       assert 3 == 4", "FAILED tests/test_x.py::test_sum"}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := resultDigest(tc.in)
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("digest %q lacks %q", got, w)
				}
			}
			for _, n := range tc.not {
				if strings.Contains(got, n) {
					t.Errorf("digest %q has %q", got, n)
				}
			}
		})
	}
}

func TestFitSummaryKeepsFiles(t *testing.T) {
	var b strings.Builder
	for i := 0; i < 500; i++ {
		b.WriteString("- Assistant: a long line of what happened in this step of the work\n")
	}
	b.WriteString("## Files\n- modified: pkg/a.go\n")
	out := fitSummary(b.String(), 300)
	if len(out) > 300*3 {
		t.Errorf("fitted summary %d bytes, bound %d", len(out), 900)
	}
	if !strings.Contains(out, "## Files\n- modified: pkg/a.go") || !strings.Contains(out, "lines condensed") {
		t.Errorf("fitted summary lost the files section or the marker:\n%s", out)
	}
}

func TestFilesSection(t *testing.T) {
	fl := newFileLog()
	fl.noteCall("Read", `{"file_path":"/src/a.go"}`)
	fl.noteCall("Edit", `{"file_path":"/src/b.go","old_string":"x"}`)
	fl.noteCall("bash", `{"command":"sed -i s/a/b/ pkg/c.py && cat pkg/d.py"}`)
	fl.noteCall("Grep", `{"pattern":"Foo","path":"pkg/"}`)
	fl.noteResult("pkg/e.go:12: Foo()\npkg/f.go:3: Foo")
	sec := fl.section()
	for _, w := range []string{"modified: ", "/src/b.go", "pkg/c.py", "read: ", "/src/a.go", "found: ", "pkg/e.go"} {
		if !strings.Contains(sec, w) {
			t.Errorf("files section lacks %q:\n%s", w, sec)
		}
	}
}
