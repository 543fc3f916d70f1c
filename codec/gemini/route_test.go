package gemini

import "testing"

func TestRoute(t *testing.T) {
	for _, c := range []struct {
		path, model, method string
		ok                  bool
	}{
		{"/v1beta/models/gemini-2.5-pro:generateContent", "gemini-2.5-pro", "generateContent", true},
		{"/v1/models/gemini-2.5-flash:streamGenerateContent", "gemini-2.5-flash", "streamGenerateContent", true},
		{"/v1beta/models/m:countTokens", "m", "countTokens", true},
		{"/v1beta/models/m:embedContent", "", "", false},
		{"/v1beta/models/:generateContent", "", "", false},
		{"/v1beta/models/a/b:generateContent", "", "", false},
		{"/v1beta/models/m", "", "", false},
		{"/v1/chat/completions", "", "", false},
		{"/v2/models/m:generateContent", "", "", false},
	} {
		model, method, ok := Route(c.path)
		if model != c.model || method != c.method || ok != c.ok {
			t.Errorf("Route(%q) = %q, %q, %v; want %q, %q, %v", c.path, model, method, ok, c.model, c.method, c.ok)
		}
	}
	for _, m := range Methods {
		for _, p := range Patterns(m.Name) {
			if p[0] != '/' || p[len(p)-len(m.Name):] != m.Name {
				t.Errorf("pattern %q of %s", p, m.Name)
			}
		}
	}
}
