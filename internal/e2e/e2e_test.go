// Package e2e_test runs whole sessions through an in-process proxy with the
// real engine in front of the strict fake upstream (internal/harness).
package e2e_test

import (
	"bytes"
	"net/http"
	"testing"
)

func post(t *testing.T, url string, body []byte, hdr map[string]string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}
