package testenv

import (
	"context"
	"errors"
	"os"
	"testing"
)

func TestInCI(t *testing.T) {
	for _, tc := range []struct {
		name, value string
		want        bool
	}{
		{"unset", "", false},
		{"zero", "0", false},
		{"false", "false", false},
		{"False", "False", false},
		{"true", "true", true},
		{"one", "1", true},
		{"TRUE", "TRUE", true},
		{"yes", "yes", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("CI", tc.value)
			if got := InCI(); got != tc.want {
				t.Errorf("CI=%q: InCI() = %v, want %v", tc.value, got, tc.want)
			}
		})
	}
}

// TestUnraced: under -race the test runs again in a binary without it.
func TestUnraced(t *testing.T) {
	if Unraced(t) {
		return
	}
	if Race {
		t.Fatal("Unraced returned false in a binary built with -race")
	}
}

// TestUnracedVerdicts: runUnraced reports the other binary's verdict: a
// pass, a failure, a skip, a test that does not exist.
func TestUnracedVerdicts(t *testing.T) {
	t.Setenv("TESTENV_TARGET", "1")
	ctx := context.Background()
	bin, err := buildUnraced(ctx, t.TempDir())
	if err != nil {
		t.Fatalf("%v\n%s", err, bin)
	}
	if _, err := runUnraced(ctx, bin, "TestUnracedTargetPasses"); err != nil {
		t.Errorf("passing test: %v", err)
	}
	if out, err := runUnraced(ctx, bin, "TestUnracedTargetFails"); err == nil || errors.Is(err, errSkipped) {
		t.Errorf("failing test: %v\n%s", err, out)
	}
	if _, err := runUnraced(ctx, bin, "TestUnracedTargetSkips"); !errors.Is(err, errSkipped) {
		t.Errorf("skipping test: %v", err)
	}
	if _, err := runUnraced(ctx, bin, "TestNoSuchTest"); err == nil {
		t.Error("a test that does not exist passed")
	}
}

// The targets of TestUnracedVerdicts, which sets TESTENV_TARGET; alone
// they skip.
func target(t *testing.T) {
	if os.Getenv("TESTENV_TARGET") == "" {
		t.Skip("run by TestUnracedVerdicts")
	}
}

func TestUnracedTargetPasses(t *testing.T) { target(t) }

func TestUnracedTargetFails(t *testing.T) {
	target(t)
	t.Error("failing as TestUnracedVerdicts asks")
}

func TestUnracedTargetSkips(t *testing.T) {
	target(t)
	t.Skip("skipping as TestUnracedVerdicts asks")
}

func TestWithoutRace(t *testing.T) {
	for in, want := range map[string]string{
		"":                       "",
		"-race":                  "",
		"-mod=mod -race -v":      "-mod=mod -v",
		"--race=true -count=1":   "-count=1",
		"-racy -trimpath":        "-racy -trimpath",
		"  -race   -tags=a,b   ": "-tags=a,b",
	} {
		if got := withoutRace(in); got != want {
			t.Errorf("withoutRace(%q) = %q, want %q", in, got, want)
		}
	}
}
