package proxy

import (
	"net/http"
	"testing"
)

// TestScopeOfAuthorizationSpellings: the spellings of one bearer key
// the inbound auth accepts make one scope; another key or scheme does not.
func TestScopeOfAuthorizationSpellings(t *testing.T) {
	s := NewScoper([]byte("spellings"), nil)
	want := s.Scope(http.Header{"Authorization": {"Bearer sk-k"}})
	tests := []struct {
		name, value string
		same        bool
	}{
		{"lower case", "bearer sk-k", true},
		{"upper case", "BEARER sk-k", true},
		{"two spaces", "Bearer  sk-k", true},
		{"a tab", "Bearer\tsk-k", true},
		{"around", " Bearer sk-k ", true},
		{"another key", "Bearer sk-K", false},
		{"another scheme", "Basic sk-k", false},
		{"no scheme", "sk-k", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := http.Header{"Authorization": {tc.value}}
			if got := s.Scope(h); (got == want) != tc.same {
				t.Errorf("scope of %q equal to Bearer's: %v, want %v", tc.value, got == want, tc.same)
			}
			accepted := len(PresentedKeys(h)) == 1 && PresentedKeys(h)[0] == "sk-k"
			if accepted != (tc.same) {
				t.Errorf("%q presents the key: %v, want %v", tc.value, accepted, tc.same)
			}
		})
	}
}
