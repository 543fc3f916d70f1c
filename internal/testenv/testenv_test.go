package testenv

import "testing"

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
