package config

import (
	"strings"
	"testing"
)

func TestUIKeys(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		env     []string
		yaml    string
		enabled bool
		convs   int
		reqs    int
		keys    string
	}{
		{"defaults", nil, nil, "", true, 100, 500, ""},
		{"file", nil, nil, "ui:\n  enabled: false\n  max_conversations: 7\n  max_requests_per_conversation: 9\n  keys: [admin-1, admin-2]\n", false, 7, 9, "admin-1,admin-2"},
		{"env", nil, []string{"CONDENSE_UI_ENABLED=false", "CONDENSE_UI_MAX_CONVERSATIONS=3", "CONDENSE_UI_MAX_REQUESTS_PER_CONVERSATION=4", "CONDENSE_UI_KEYS=a, b"}, "", false, 3, 4, "a,b"},
		{"flags over env", []string{"--ui=true", "--ui-max-conversations", "5", "--ui-max-requests-per-conversation", "6", "--ui-keys", "f"}, []string{"CONDENSE_UI_ENABLED=false", "CONDENSE_UI_KEYS=e"}, "", true, 5, 6, "f"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			args := tc.args
			if tc.yaml != "" {
				args = append(args, "--config", writeFile(t, tc.yaml))
			}
			c, err := Load(flags(t, args...), withUpstream(tc.env...))
			if err != nil {
				t.Fatal(err)
			}
			u := c.UI
			if u.Enabled != tc.enabled || u.MaxConversations != tc.convs || u.MaxRequestsPerConversation != tc.reqs || strings.Join(u.Keys, ",") != tc.keys {
				t.Errorf("ui = %+v", u)
			}
		})
	}
}

func TestUIValidation(t *testing.T) {
	_, err := Load(flags(t, "--config", writeFile(t, "ui:\n  max_conversations: 0\n  max_requests_per_conversation: -1\n  keys: [\"  \"]\n")), withUpstream())
	for _, w := range []string{"ui.max_conversations", "ui.max_requests_per_conversation", "ui.keys[0]"} {
		if err == nil || !strings.Contains(err.Error(), w) {
			t.Errorf("error does not mention %q: %v", w, err)
		}
	}
	// Sizes do not matter when the page is off.
	if _, err := Load(flags(t, "--config", writeFile(t, "ui:\n  enabled: false\n  max_conversations: 0\n")), withUpstream()); err != nil {
		t.Errorf("disabled page with zero sizes: %v", err)
	}
}
