package llm

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
)

func TestEmbed(t *testing.T) {
	var got struct {
		Model string   `json:"model"`
		Input []string `json:"input"`
	}
	var auth, path string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		json.Unmarshal(b, &got)
		auth, path = r.Header.Get("Authorization"), r.URL.Path
		// Out of order, as the API allows.
		w.Write([]byte(`{"data":[{"index":1,"embedding":[0,1]},{"index":0,"embedding":[1,0]}]}`))
	}))
	defer srv.Close()
	u, _ := url.Parse(srv.URL)
	c := &EmbeddingsClient{BaseURL: u}
	vecs, err := c.Embed(context.Background(), "m", []string{"a", "b"}, http.Header{"Authorization": {"Bearer k"}})
	if err != nil || len(vecs) != 2 || vecs[0][0] != 1 || vecs[1][1] != 1 {
		t.Fatalf("vecs %v err %v", vecs, err)
	}
	if path != "/v1/embeddings" || auth != "Bearer k" || got.Model != "m" || len(got.Input) != 2 {
		t.Errorf("request: path %s auth %q body %+v", path, auth, got)
	}
	if _, err := c.Embed(context.Background(), "m", []string{"a", "b", "c"}, nil); err == nil {
		t.Error("an answer missing a vector is not an error")
	}
}
