package tokenizer

import (
	"encoding/base64"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	pk "github.com/pkoukk/tiktoken-go"
	pkloader "github.com/pkoukk/tiktoken-go-loader"
	tk "github.com/tiktoken-go/tokenizer"

	"github.com/condense-proxy/condense-proxy/internal/corpus"
)

// corpusTexts returns the message texts of the shared corpus, or skips.
func corpusTexts(b testing.TB) []string {
	dir := filepath.Join("..", "..", "shared", "corpus", "raw")
	files, err := corpus.Files(dir)
	if err != nil || len(files) == 0 {
		b.Skip("shared corpus absent")
	}
	var texts []string
	for _, f := range files {
		s, err := corpus.Load(f)
		if err != nil {
			b.Fatal(err)
		}
		for _, m := range s.Messages {
			if m.Content != nil {
				texts = append(texts, *m.Content)
			}
			for _, c := range m.ToolCalls {
				texts = append(texts, c.Function.Arguments)
			}
		}
	}
	return texts
}

func totalLen(texts []string) int64 {
	n := 0
	for _, t := range texts {
		n += len(t)
	}
	return int64(n)
}

// BenchmarkCorpusCold counts every text of the shared corpus with empty
// caches, on one goroutine: the MB/s column is cold throughput.
func BenchmarkCorpusCold(b *testing.B) {
	texts := corpusTexts(b)
	b.SetBytes(totalLen(texts))
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		c := New(Options{})
		for _, t := range texts {
			c.Text(O200kBase, t)
		}
	}
}

// BenchmarkCorpusLibraries compares the two tiktoken ports on the same
// texts, whole texts, no caching.
func BenchmarkCorpusLibraries(b *testing.B) {
	texts := corpusTexts(b)
	b.Run("tiktoken-go/tokenizer", func(b *testing.B) {
		enc, _ := tk.Get(tk.O200kBase)
		b.SetBytes(totalLen(texts))
		for i := 0; i < b.N; i++ {
			for _, t := range texts {
				enc.Count(t)
			}
		}
	})
	b.Run("pkoukk/tiktoken-go", func(b *testing.B) {
		pk.SetBpeLoader(pkloader.NewOfflineLoader())
		enc, err := pk.GetEncoding("o200k_base")
		if err != nil {
			b.Fatal(err)
		}
		b.SetBytes(totalLen(texts))
		for i := 0; i < b.N; i++ {
			for _, t := range texts {
				enc.Encode(t, nil, nil)
			}
		}
	})
}

// BenchmarkShortTextsCold counts 100,000 distinct short messages ("ping
// 123", "pong", a sentence) with a new Counter: what a request of many tiny
// messages costs the tokenizer on its first sight. The ns/text column is
// one text's cold count.
func BenchmarkShortTextsCold(b *testing.B) {
	texts := make([]string, 100000)
	for i := range texts {
		switch i % 3 {
		case 0:
			texts[i] = fmt.Sprintf("ping %d", i)
		case 1:
			texts[i] = "pong"
		default:
			texts[i] = fmt.Sprintf("Step %d: checking the service's log, it's fine.", i)
		}
	}
	b.SetBytes(totalLen(texts))
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		c := New(Options{})
		for _, t := range texts {
			c.Text(O200kBase, t)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(texts)), "ns/text")
}

func adversarial() map[string]string {
	rng := rand.New(rand.NewSource(1))
	raw := make([]byte, 3<<18)
	rng.Read(raw)
	digits := make([]byte, 1<<20)
	for i := range digits {
		digits[i] = byte('0' + rng.Intn(10))
	}
	js := strings.Repeat(`function a(b,c){return b.map(function(d){return d*c+0x1f})};var e=[1,2,3],f={g:"h",i:[4,5]};`, 12000)
	return map[string]string{
		"letter": strings.Repeat("a", 1<<20),
		"dashes": strings.Repeat("-", 1<<20),
		"spaces": strings.Repeat(" ", 1<<20),
		"base64": base64.StdEncoding.EncodeToString(raw),
		"digits": string(digits),
		"minjs":  js[:1<<20],
		"ab":     strings.Repeat("ab", 1<<19),
		"cjk":    strings.Repeat("漢字かな", 1<<16),
	}
}

// BenchmarkAdversarial counts 1 MB inputs built to be slow, each with a cold
// cache; ms/op must stay under 300.
func BenchmarkAdversarial(b *testing.B) {
	for name, s := range adversarial() {
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(s)))
			var worst time.Duration
			for i := 0; i < b.N; i++ {
				c := New(Options{})
				t0 := time.Now()
				c.Text(O200kBase, s)
				worst = max(worst, time.Since(t0))
			}
			b.ReportMetric(float64(worst.Microseconds())/1000, "worst-ms")
		})
	}
}

func TestMain(m *testing.M) {
	os.Exit(m.Run())
}
