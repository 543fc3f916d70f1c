package memory

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/condense-proxy/condense-proxy/cache"
	"github.com/condense-proxy/condense-proxy/condense"
)

// conceptEmbedder embeds a text as its counts of a few concepts, each
// named by several words: texts about one concept in different words are
// close, as with a real embedding model.
type conceptEmbedder struct {
	mu    sync.Mutex
	texts int
	creds []string
	fail  bool
}

var concepts = [][]string{
	{"credential", "secret", "token", "password", "key"},
	{"database", "postgres", "sql", "table"},
	{"deploy", "release", "rollout", "ship"},
}

func (c *conceptEmbedder) Embed(_ context.Context, _ string, texts []string, creds http.Header) ([][]float32, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.creds = append(c.creds, creds.Get("Authorization"))
	if c.fail {
		return nil, errors.New("upstream down")
	}
	c.texts += len(texts)
	out := make([][]float32, len(texts))
	for i, t := range texts {
		v := make([]float32, len(concepts)+1)
		v[len(concepts)] = 0.01
		for j, words := range concepts {
			for _, w := range words {
				v[j] += float32(strings.Count(strings.ToLower(t), w))
			}
		}
		out[i] = v
	}
	return out, nil
}

// TestHybridSearch: with an embedding model, an item that says the same
// thing in other words than the query is found (BM25 alone misses it),
// vectors are asked once and then read from the store, the caller's
// credentials go with the call, and a failing upstream leaves BM25's
// answer.
func TestHybridSearch(t *testing.T) {
	ctx := context.Background()
	store := cache.NewMemory(64 << 20)
	items := []condense.MemoryItem{
		step("s1", "[tool result]\nThe secret for the staging box is stored in vault path kv/staging.", 1, "w"),
		step("s2", "[assistant]\nI listed the postgres tables: users, orders.", 2, "w"),
		step("s3", "[assistant]\nThe rollout ran at noon.", 3, "w"),
	}
	creds := http.Header{"Authorization": {"Bearer sk-caller"}}
	query := "where is the password kept"

	plain := New(store, Options{})
	plain.Add(ctx, "s", "c", items)
	for _, h := range plain.Search(ctx, "s", "c", query, 3, creds) {
		if h.Item.ID == "s1" {
			t.Fatal("BM25 alone found the item: the test proves nothing")
		}
	}

	emb := &conceptEmbedder{}
	m := New(store, Options{Embedder: emb, EmbeddingModel: "text-embedding-3-small"})
	hits := m.Search(ctx, "s", "c", query, 3, creds)
	if len(hits) == 0 || hits[0].Item.ID != "s1" {
		t.Fatalf("hybrid search: %+v", hits)
	}
	asked := emb.texts
	if asked != 4 { // the query and three items
		t.Errorf("embedded %d texts, want 4", asked)
	}
	// Another replica over the same store: the vectors are read, not asked.
	emb2 := &conceptEmbedder{}
	m2 := New(store, Options{Embedder: emb2, EmbeddingModel: "text-embedding-3-small"})
	if hits := m2.Search(ctx, "s", "c", query, 3, creds); len(hits) == 0 || hits[0].Item.ID != "s1" || emb2.texts != 0 {
		t.Errorf("second replica: hits %+v, embedded %d texts (want 0)", hits, emb2.texts)
	}
	for _, c := range emb.creds {
		if c != "Bearer sk-caller" {
			t.Errorf("embeddings asked with %q, not the caller's credentials", c)
		}
	}

	down := New(cache.NewMemory(64<<20), Options{Embedder: &conceptEmbedder{fail: true}, EmbeddingModel: "m"})
	down.Add(ctx, "s", "c", items)
	if hits := down.Search(ctx, "s", "c", "postgres tables", 3, creds); len(hits) == 0 || hits[0].Item.ID != "s2" {
		t.Errorf("with embeddings failing, BM25's answer: %+v", hits)
	}
}
