package gemini

import "strings"

// Method is one of the model methods of the API whose requests the proxy
// condenses (countTokens only counts: it has no side effects).
type Method struct {
	Name      string
	CountOnly bool
}

// Methods are the model methods condensed, in the order routes are made.
var Methods = []Method{
	{Name: "generateContent"},
	{Name: "streamGenerateContent"},
	{Name: "countTokens", CountOnly: true},
}

// Versions are the API versions whose paths carry the model methods.
var Versions = []string{"/v1beta", "/v1"}

// Patterns returns the route patterns of method under every version,
// the model as the {model} parameter.
func Patterns(method string) []string {
	out := make([]string, len(Versions))
	for i, v := range Versions {
		out[i] = v + "/models/{model}:" + method
	}
	return out
}

// Route reads a model method's path, /v1beta/models/{model}:{method} (or
// under /v1): its model and method; ok is false for any other path or a
// method not in Methods.
func Route(path string) (model, method string, ok bool) {
	for _, v := range Versions {
		rest, found := strings.CutPrefix(path, v+"/models/")
		if !found {
			continue
		}
		model, method, ok = strings.Cut(rest, ":")
		if !ok || model == "" || strings.Contains(model, "/") {
			return "", "", false
		}
		for _, m := range Methods {
			if m.Name == method {
				return model, method, true
			}
		}
		return "", "", false
	}
	return "", "", false
}
