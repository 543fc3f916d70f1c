package memory

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"math"
	"net/http"
	"sort"
	"time"
)

// Hybrid search (Options.Embedder and Options.EmbeddingModel): BM25's
// ranking is fused with the ranking by cosine similarity of embeddings
// asked of the upstream's /v1/embeddings, with the caller's credentials
// (reciprocal rank fusion: each item scores the sum of 1/(60+rank) over
// the rankings it is in). Vectors are kept in the store (per caller,
// model and text, for TTL), so each text is embedded once across
// replicas. When embeddings fail, BM25 alone answers.

// Embedder turns texts into vectors (package llm's EmbeddingsClient).
type Embedder interface {
	Embed(ctx context.Context, model string, texts []string, creds http.Header) ([][]float32, error)
}

// Bounds of the embeddings asked for one search.
const (
	embedBatch     = 16
	maxEmbedPerAsk = 256  // items embedded for one search at most (the newest first)
	maxEmbedBytes  = 8000 // of an item's text sent
	embedTimeout   = 15 * time.Second
	rrfK           = 60.0
	cosineTop      = 50 // items the cosine ranking contributes
)

func embedKey(scope, model, text string) string {
	h := sha256.Sum256([]byte(model + "\x00" + text))
	return "emb:" + scope + ":" + hex.EncodeToString(h[:16])
}

func encodeVec(v []float32) []byte {
	b := make([]byte, 4*len(v))
	for i, f := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(f))
	}
	return b
}

func decodeVec(b []byte) []float32 {
	if len(b)%4 != 0 {
		return nil
	}
	v := make([]float32, len(b)/4)
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return v
}

func cosine(a, b []float32) float64 {
	if len(a) != len(b) || len(a) == 0 {
		return 0
	}
	var dot, na, nb float64
	for i := range a {
		dot += float64(a[i]) * float64(b[i])
		na += float64(a[i]) * float64(a[i])
		nb += float64(b[i]) * float64(b[i])
	}
	if na == 0 || nb == 0 {
		return 0
	}
	return dot / math.Sqrt(na*nb)
}

// embed returns the vectors of texts: from the replica's record (vecs),
// the store, or the Embedder (then kept in both). A text it could not get
// a vector for has none (nil). Called with the conversation's lock held.
func (m *Memory) embed(ctx context.Context, scope string, vecs map[string][]float32, texts []string, creds http.Header) [][]float32 {
	out := make([][]float32, len(texts))
	var missing []int
	for i, t := range texts {
		key := embedKey(scope, m.opts.EmbeddingModel, t)
		if v, ok := vecs[key]; ok {
			out[i] = v
			continue
		}
		if b, ok := m.store.Get(ctx, key); ok {
			if v := decodeVec(b); v != nil {
				out[i], vecs[key] = v, v
				continue
			}
		}
		missing = append(missing, i)
	}
	if len(missing) == 0 {
		return out
	}
	ctx, cancel := context.WithTimeout(ctx, embedTimeout)
	defer cancel()
	for start := 0; start < len(missing); start += embedBatch {
		batch := missing[start:min(start+embedBatch, len(missing))]
		in := make([]string, len(batch))
		for j, i := range batch {
			in[j] = clip(texts[i], maxEmbedBytes)
		}
		got, err := m.opts.Embedder.Embed(ctx, m.opts.EmbeddingModel, in, creds)
		if err != nil || len(got) != len(batch) {
			m.opts.Logger.Debug("memory: embeddings failed; BM25 alone", "err", err)
			return out
		}
		for j, i := range batch {
			key := embedKey(scope, m.opts.EmbeddingModel, texts[i])
			out[i], vecs[key] = got[j], got[j]
			m.store.Add(context.WithoutCancel(ctx), key, encodeVec(got[j]), m.opts.TTL)
		}
	}
	return out
}

// fuse merges BM25's ranking with the cosine ranking of the items'
// embeddings against query's (reciprocal rank fusion). Called with the
// conversation's lock held.
func (m *Memory) fuse(ctx context.Context, scope string, c *conv, query string, bm []scored, creds http.Header) []scored {
	if c.vecs == nil {
		c.vecs = map[string][]float32{}
	}
	qv := m.embed(ctx, scope, c.vecs, []string{query}, creds)[0]
	if qv == nil {
		return bm
	}
	// The newest items first, within the bound.
	var idx []int
	for i := len(c.items) - 1; i >= 0 && len(idx) < maxEmbedPerAsk; i-- {
		idx = append(idx, i)
	}
	texts := make([]string, len(idx))
	for j, i := range idx {
		texts[j] = c.items[i].Text
	}
	vs := m.embed(ctx, scope, c.vecs, texts, creds)
	var cos []scored
	for j, i := range idx {
		if vs[j] != nil {
			cos = append(cos, scored{i, cosine(qv, vs[j])})
		}
	}
	if len(cos) == 0 {
		return bm
	}
	sort.SliceStable(cos, func(a, b int) bool { return cos[a].score > cos[b].score })
	if len(cos) > cosineTop {
		cos = cos[:cosineTop]
	}
	fused := map[int]float64{}
	for r, s := range bm {
		fused[s.doc] += 1 / (rrfK + float64(r+1))
	}
	for r, s := range cos {
		fused[s.doc] += 1 / (rrfK + float64(r+1))
	}
	out := make([]scored, 0, len(fused))
	for d, s := range fused {
		out = append(out, scored{d, s})
	}
	sort.Slice(out, func(a, b int) bool {
		if out[a].score != out[b].score {
			return out[a].score > out[b].score
		}
		return out[a].doc > out[b].doc
	})
	return out
}
