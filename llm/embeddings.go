package llm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
)

// EmbeddingsClient calls {BaseURL}/v1/embeddings (OpenAI's, as LiteLLM
// serves it), for the conversations' memory. Safe for concurrent use.
type EmbeddingsClient struct {
	// BaseURL is the upstream base, as the proxy uses it.
	BaseURL *url.URL
	// HTTP sends the request. Nil: http.DefaultClient.
	HTTP *http.Client
}

// Embed returns one vector per text, in order, asked with the caller's
// credentials.
func (c *EmbeddingsClient) Embed(ctx context.Context, model string, texts []string, creds http.Header) ([][]float32, error) {
	if len(texts) == 0 {
		return nil, nil
	}
	body, err := json.Marshal(map[string]any{"model": model, "input": texts})
	if err != nil {
		return nil, fmt.Errorf("encoding embeddings request: %w", err)
	}
	data, err := post(ctx, c.HTTP, endpoint(c.BaseURL, "/v1/embeddings"), body, creds, nil)
	if err != nil {
		return nil, fmt.Errorf("embeddings: %w", err)
	}
	var out struct {
		Data []struct {
			Index     int       `json:"index"`
			Embedding []float32 `json:"embedding"`
		} `json:"data"`
	}
	if err := json.Unmarshal(data, &out); err != nil {
		return nil, fmt.Errorf("decoding embeddings: %w", err)
	}
	vecs := make([][]float32, len(texts))
	for _, d := range out.Data {
		if d.Index < 0 || d.Index >= len(texts) || len(d.Embedding) == 0 {
			return nil, errors.New("embeddings: answer out of order or empty")
		}
		vecs[d.Index] = d.Embedding
	}
	for i, v := range vecs {
		if v == nil {
			return nil, fmt.Errorf("embeddings: no vector for input %d", i)
		}
	}
	return vecs, nil
}
