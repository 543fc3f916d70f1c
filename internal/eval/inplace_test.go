package eval

import (
	"context"
	"testing"

	"github.com/condense-proxy/condense-proxy/config"
	"github.com/condense-proxy/condense-proxy/internal/testenv"
)

// TestSummariesAskedInPlace replays sessions in full mode in every format
// (chat, Messages with thinking, Responses with reasoning) through the
// whole proxy and its strict fake upstreams, once as configured (the
// summaries asked in place: the request as forwarded, then the
// instruction) and once with a summary model of its own (which has no
// cache of the conversation: the plain form). Asked in place, part of the
// summarizer's input is what the provider cached of the conversation (the
// summaries the background prepares, and a first fold's; a later fold
// made in the request itself is asked in the plain form), the summaries
// keep the same facts, and the bill is lower.
func TestSummariesAskedInPlace(t *testing.T) {
	if testenv.Unraced(t) {
		return // deterministic replays: their numbers, without the race detector
	}
	classic := Mode{Name: "full-classic", Header: "full", Summarizer: "llm", Configure: func(c *config.Config) { c.Condense.SummaryModel = "small-summary-model" }}
	full := Mode{Name: "full-llm", Header: "full", Summarizer: "llm"}
	rep, err := Run(context.Background(), Config{
		Sources: []Source{
			{Spec: "synthetic:7:250000", Window: 32000},
			{Spec: "synthetic:3:250000:reasoning", Window: 32000, Format: "messages"},
			{Spec: "synthetic:3:250000:reasoning", Window: 32000, Format: "responses"},
		},
		Modes: []Mode{Modes[0], full, classic}, FaithfulSummaries: true, SummaryTokens: 500, Log: t.Logf,
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range rep.Check(0.95) {
		t.Error(p)
	}
	rows := map[string]map[string]Row{}
	for _, row := range rep.Rows {
		if rows[row.Format] == nil {
			rows[row.Format] = map[string]Row{}
		}
		rows[row.Format][row.Mode] = row
	}
	for _, format := range []string{"chat", "messages", "responses"} {
		in, plain := rows[format]["full-llm"], rows[format]["full-classic"]
		if in.SummarizerCalls == 0 || plain.SummarizerCalls == 0 {
			t.Errorf("%s: no summarizer call (in place %d, plain %d): nothing measured", format, in.SummarizerCalls, plain.SummarizerCalls)
			continue
		}
		if in.SummarizerCached == 0 {
			t.Errorf("%s: no summary asked in place (%d summarizer input tokens, none cached)", format, in.SummarizerTokens)
		}
		if plain.SummarizerCached != 0 {
			t.Errorf("%s: a summary model of its own read %d tokens from the conversation's cache", format, plain.SummarizerCached)
		}
		if in.FactsKept*100 < plain.FactsKept*95 {
			t.Errorf("%s: asked in place, the summaries kept %d planted facts, the plain form %d", format, in.FactsKept, plain.FactsKept)
		}
		if !(in.BillAnthropic < plain.BillAnthropic) {
			t.Errorf("%s: asked in place, bill %.3f, not below the plain form's %.3f", format, in.BillAnthropic, plain.BillAnthropic)
		}
		t.Logf("%s: in place bill %.3f (summarizer %dk, %dk cached), plain %.3f (%dk); facts %d vs %d", format,
			in.BillAnthropic, in.SummarizerTokens/1000, in.SummarizerCached/1000, plain.BillAnthropic, plain.SummarizerTokens/1000, in.FactsKept, plain.FactsKept)
	}
}
