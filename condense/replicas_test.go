package condense

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/condense-proxy/condense-proxy/cache"
	msgcodec "github.com/condense-proxy/condense-proxy/codec/messages"
	"github.com/condense-proxy/condense-proxy/codec/responses"
	"github.com/condense-proxy/condense-proxy/internal/corpus"
	"github.com/condense-proxy/condense-proxy/internal/redistest"
)

// replicaForms are a synthetic session of about 500k characters in each
// wire format: chat completions, Responses with reasoning, Messages with
// thinking.
func replicaForms(t *testing.T) []sessionForm {
	sess, _ := corpus.Synthetic(41, 500_000)
	ends := sess.TurnEnds()
	reasoning := corpus.WithReasoning(sess, 41)
	rs := corpus.Responses(reasoning)
	ms, err := corpus.ClaudeMessages(corpus.ClaudeLog(reasoning))
	if err != nil {
		t.Fatal(err)
	}
	return []sessionForm{
		{"chat", chatCodec, func(k int) ([]byte, error) { return sess.Request("gpt-4o", ends[k]) }, len(ends)},
		{"responses", responses.New(counter), rs.Request, rs.Turns()},
		{"messages", msgcodec.New(counter), ms.Request, ms.Turns()},
	}
}

// TestReplicasAlternating: two engines that share only the cache — each
// built as serve builds a replica on Redis, a memory of its own in front
// of the one Redis — handed a conversation's requests alternately (a
// round-robin balancer), forward every request byte for byte as one
// engine handed all of them does, and estimate the same bill; so does an
// engine restarted mid-session (its process memory lost). In every mode
// and format, with the LLM summarizer and with the extractive one. Any
// state a decision reads from process memory makes them disagree.
func TestReplicasAlternating(t *testing.T) {
	srv, other := redistest.Start(t), redistest.Start(t)
	for _, f := range replicaForms(t) {
		for _, mode := range []string{ModeFull, ModeSelective, ModeAuto, ModeTruncate} {
			for _, llm := range []bool{true, false} {
				t.Run(fmt.Sprintf("%s/%s/llm=%v", f.name, mode, llm), func(t *testing.T) {
					replicasAgree(t, srv, other, f, mode, llm)
				})
			}
		}
	}
}

func replicasAgree(t *testing.T, srv, other *redistest.Server, f sessionForm, mode string, llm bool) {
	clock := time.Unix(1_700_000_000, 0)
	now := func() time.Time { return clock }
	engine := func(c Cache) *Engine {
		var sum Summarizer
		if llm {
			sum = &countingSummarizer{}
		}
		return New(Deps{Counter: counter, Models: limits(48_000), Cache: c, Summarizer: sum, Now: now},
			Options{SelectiveEnabled: true, MaxSummarizerCalls: 100, AutoLLMShare: 0.5})
	}
	layered := func(srv *redistest.Server) Cache {
		r, err := cache.NewRedis(cache.RedisOptions{URL: srv.URL()})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { r.Close() })
		return &cache.Layered{Mem: cache.NewMemory(64 << 20), Redis: r, MemoryTTL: 10 * time.Minute}
	}
	// Each run of the test has scopes of its own on the shared Redis.
	scope := fmt.Sprintf("s%d-%s-%s-%v", time.Now().UnixNano(), f.name, mode, llm)
	run := func(e *Engine, b []byte) Result {
		res, err := e.Condense(context.Background(), Request{Codec: f.codec, Body: b, Mode: mode, Scope: scope})
		if err != nil {
			t.Fatal(err)
		}
		if err := e.Close(context.Background()); err != nil {
			t.Fatal(err)
		}
		return res
	}
	alone := engine(cache.NewMemory(256 << 20))
	pair := []*Engine{engine(layered(srv)), engine(layered(srv))}
	// The restarted: one engine on a Redis of its own, replaced by a new
	// one (its process memory lost) halfway through the session.
	restarted := engine(layered(other))
	var billOne, billTwo float64
	condensed := 0
	for k := 0; k < f.turns; k++ {
		clock = clock.Add(20 * time.Second)
		b, err := f.req(k)
		if err != nil {
			t.Fatal(err)
		}
		one := run(alone, b)
		two := run(pair[k%2], b)
		if !bytes.Equal(one.Body, two.Body) {
			t.Fatalf("request %d: the pair forwarded other bytes than one engine (%s %q / %s %q)",
				k, two.Report.Applied, two.Report.Reason, one.Report.Applied, one.Report.Reason)
		}
		if k == f.turns/2 {
			restarted = engine(layered(other))
		}
		if r := run(restarted, b); !bytes.Equal(one.Body, r.Body) {
			t.Fatalf("request %d: an engine restarted at request %d forwarded other bytes than one engine (%s %q / %s %q)",
				k, f.turns/2, r.Report.Applied, r.Report.Reason, one.Report.Applied, one.Report.Reason)
		}
		if one.Report.Applied != AppliedNone {
			condensed++
		}
		billOne += one.Report.Bill
		billTwo += two.Report.Bill
	}
	if condensed < 5 {
		t.Fatalf("only %d of %d requests condensed", condensed, f.turns)
	}
	if math.Abs(billTwo-billOne) > 0.02*billOne {
		t.Errorf("the pair's estimated bill %.0f, one engine's %.0f: more than 2%% apart", billTwo, billOne)
	}
}

// TestAutoPastItsAllowanceIsNotDegraded: auto's cut past its LLM
// allowance takes extractive summaries — the path it is designed to take,
// so its requests are not reported degraded — and the reason says why.
func TestAutoPastItsAllowanceIsNotDegraded(t *testing.T) {
	f := replicaForms(t)[0]
	sum := &countingSummarizer{}
	e := New(Deps{Counter: counter, Models: limits(48_000), Cache: cache.NewMemory(64 << 20), Summarizer: sum},
		Options{SelectiveEnabled: true, MaxSummarizerCalls: 100, AutoLLMShare: 1e-9})
	said := 0
	for k := 0; k < f.turns; k++ {
		b, err := f.req(k)
		if err != nil {
			t.Fatal(err)
		}
		res, err := e.Condense(context.Background(), Request{Codec: f.codec, Body: b, Mode: ModeAuto, Scope: "s"})
		if err != nil {
			t.Fatal(err)
		}
		if res.Report.Degraded != "" {
			t.Fatalf("request %d degraded: %s", k, res.Report.Degraded)
		}
		if res.Report.Took(PathExtractiveAllowance) {
			said++
		}
	}
	if said == 0 {
		t.Fatal("no request took extractive summaries past the allowance: the premise does not hold")
	}
}
