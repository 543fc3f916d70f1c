// Package apierror writes the error body of OpenAI's APIs (chat
// completions and Responses share it): the shape their clients read when
// the proxy answers for the upstream.
package apierror

import "encoding/json"

// OpenAI returns {"error":{"message","type","param","code"}}.
func OpenAI(typ, msg string) []byte {
	b, _ := json.Marshal(map[string]any{"error": map[string]any{
		"message": msg, "type": typ, "param": nil, "code": nil,
	}})
	return b
}
