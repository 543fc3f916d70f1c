package logfacts

import (
	"slices"
	"strings"
	"testing"
)

func TestKeyLines(t *testing.T) {
	tests := []struct {
		name string
		in   string
		max  int
		want []string
		not  []string
	}{
		{"go test assertion without an error word", "=== RUN   TestStore\n--- FAIL: TestStore (0.00s)\n    store_test.go:42: got 3 want 4\nFAIL\nexit status 1\nFAIL\tpkg/store\t0.01s", 6,
			[]string{"--- FAIL: TestStore (0.00s)", "store_test.go:42: got 3 want 4"}, nil},
		{"pytest", "tests/test_x.py::test_sum FAILED\n    def test_sum():\n>       assert add(1, 2) == 4\nE       assert 3 == 4\nE        +  where 3 = add(1, 2)\n\ntests/test_x.py:7: AssertionError\nFAILED tests/test_x.py::test_sum - assert 3 == 4", 8,
			[]string{"E       assert 3 == 4", "tests/test_x.py:7: AssertionError", "FAILED tests/test_x.py::test_sum - assert 3 == 4"}, nil},
		{"jest", "  ● parser › parses negative durations\n\n    expect(received).toBe(expected)\n\n    Expected: -5\n    Received: 5\n", 6,
			[]string{"● parser › parses negative durations", "Expected: -5", "Received: 5"}, nil},
		{"cargo", "running 2 tests\ntest parse::neg ... FAILED\n\nthread 'parse::neg' panicked at src/parse.rs:40:9:\nassertion `left == right` failed\n  left: 5\n right: -5", 8,
			[]string{"test parse::neg ... FAILED", "thread 'parse::neg' panicked at src/parse.rs:40:9:", "left: 5", "right: -5"}, nil},
		{"python traceback keeps its last frame", "Traceback (most recent call last):\n  File \"/app/main.py\", line 3, in <module>\n    run()\n  File \"/app/run.py\", line 12, in run\n    parse(x)\nValueError: bad value", 6,
			[]string{"File \"/app/run.py\", line 12, in run", "ValueError: bad value"}, []string{"File \"/app/main.py\""}},
		{"compiler errors", "# pkg/store\npkg/store/store.go:12:5: undefined: Foo\nsrc/a.ts(3,5): error TS2304: Cannot find name 'x'.\nerror[E0425]: cannot find value `y` in this scope\n  --> src/main.rs:3:5", 6,
			[]string{"pkg/store/store.go:12:5: undefined: Foo", "src/a.ts(3,5): error TS2304: Cannot find name 'x'.", "error[E0425]: cannot find value `y` in this scope", "--> src/main.rs:3:5"}, nil},
		{"go panic", "panic: runtime error: index out of range [3] with length 3\n\ngoroutine 1 [running]:\nmain.parse(...)\n\t/app/parse.go:40 +0x1d\nexit status 2", 6,
			[]string{"panic: runtime error: index out of range [3] with length 3"}, nil},
		{"precise lines win when space is short", "an error a\nan error b\nwarning error c\n--- FAIL: TestX (0.00s)\n    x_test.go:1: boom", 2,
			[]string{"--- FAIL: TestX (0.00s)", "x_test.go:1: boom"}, []string{"warning error c"}},
		{"code mentioning errors is not an error", "func parse() error {\n\treturn nil\n}", 6, nil, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := KeyLines(tc.in, tc.max)
			if len(got) > tc.max {
				t.Errorf("%d lines, max %d", len(got), tc.max)
			}
			for _, w := range tc.want {
				if !slices.Contains(got, w) {
					t.Errorf("lacks %q in %q", w, got)
				}
			}
			for _, n := range tc.not {
				for _, g := range got {
					if strings.Contains(g, n) {
						t.Errorf("has %q in %q", n, got)
					}
				}
			}
		})
	}
}

func TestExitAndFailingTests(t *testing.T) {
	for in, want := range map[string]string{"<returncode>2</returncode>": "2", "exit status 1": "1", "Process exited with code 137": "137", "ok": ""} {
		if got := Exit(in); got != want {
			t.Errorf("Exit(%q) = %q, want %q", in, got, want)
		}
	}
	got := FailingTests("--- FAIL: TestA (0.00s)\nFAILED tests/t.py::test_b - x\n--- FAIL: TestA (0.00s)\ntest c::d ... FAILED")
	if want := []string{"TestA", "tests/t.py::test_b", "c::d"}; !slices.Equal(got, want) {
		t.Errorf("FailingTests = %q, want %q", got, want)
	}
}
