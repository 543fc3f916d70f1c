package harness

import (
	"net/http"
	"slices"
	"strings"
	"testing"
)

// TestReplicasTakeTurns: with Replicas the proxy hands the requests to
// its replicas in turn, as a round-robin balancer does, and each answers.
func TestReplicasTakeTurns(t *testing.T) {
	for _, n := range []int{1, 2, 3} {
		s := New(Options{Window: 16000, Replicas: n})
		for range 6 {
			resp, err := http.Post(s.Proxy.URL+"/v1/chat/completions", "application/json",
				strings.NewReader(`{"model":"gpt-4o","messages":[{"role":"user","content":"hello"}]}`))
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("%d replicas: status %d", n, resp.StatusCode)
			}
		}
		s.Close()
		want := slices.Repeat([]int64{int64(6 / n)}, n)
		if got := s.Served(); !slices.Equal(got, want) {
			t.Errorf("%d replicas served %v, want %v", n, got, want)
		}
	}
}
