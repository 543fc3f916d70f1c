package eval

import "fmt"

// Pricing prices a request's input tokens relative to the model's fresh
// input price: what providers charge for a prompt prefix they have cached
// and for the rest, and what the summarizer's input and output cost.
type Pricing struct {
	Name string
	// Cached and Fresh price the forwarded request's tokens: those of its
	// cached prefix and the others.
	Cached, Fresh float64
	// SummaryIn and SummaryOut price the summarizer's tokens (the
	// summarizer priced like the main model: input 1, output at the output
	// price).
	SummaryIn, SummaryOut float64
}

// Pricings are the bills reported: Anthropic-style (cache reads at 0.1,
// cache writes at 1.25 of the input price; output 5× input, as for Claude
// Sonnet), OpenAI-style (cached input at 0.5; output 4× input, as for
// gpt-4o), and Anthropic-style with condense.summary_model naming a small
// model (a third of the main model's prices, as Claude Haiku is of
// Sonnet's).
var Pricings = []Pricing{
	{Name: "anthropic", Cached: 0.1, Fresh: 1.25, SummaryIn: 1, SummaryOut: 5},
	{Name: "openai", Cached: 0.5, Fresh: 1, SummaryIn: 1, SummaryOut: 4},
	{Name: "anthropic-small-summarizer", Cached: 0.1, Fresh: 1.25, SummaryIn: 1.0 / 3, SummaryOut: 5.0 / 3},
}

// minCachedPrefix is the shortest prefix providers cache (1024 tokens).
const minCachedPrefix = 1024

// cachedPart is the part of a forwarded request a provider bills as
// cached: its prefix identical to the conversation's previous request,
// when that prefix is at least minCachedPrefix tokens.
func cachedPart(cached int) int {
	if cached < minCachedPrefix {
		return 0
	}
	return cached
}

// requestBill is one forwarded request's price under p.
func (p Pricing) requestBill(forwarded, cached int) float64 {
	c := cachedPart(min(cached, forwarded))
	return p.Cached*float64(c) + p.Fresh*float64(forwarded-c)
}

// billRows sets, on every row, the bill ratios to mode off on the same
// session (rows of sessions without an off row keep -1).
func billRows(rows []Row) {
	off := map[string]Row{}
	for _, r := range rows {
		if r.Mode == "off" {
			off[r.Session] = r
		}
	}
	for i := range rows {
		r := &rows[i]
		r.BillAnthropic, r.BillOpenAI, r.BillSmallSummarizer = -1, -1, -1
		o, ok := off[r.Session]
		if !ok {
			continue
		}
		if o.billAnthropic > 0 {
			r.BillAnthropic = r.billAnthropic / o.billAnthropic
		}
		if o.billOpenAI > 0 {
			r.BillOpenAI = r.billOpenAI / o.billOpenAI
		}
		if o.billSmall > 0 {
			r.BillSmallSummarizer = r.billSmall / o.billSmall
		}
	}
}

// Gates are what the CI's short evaluation holds every run to, per mode:
// prefix stability at least MinPrefix and the Anthropic-style bill at most
// MaxBill of mode off.
type Gates struct {
	MinPrefix float64
	MaxBill   map[string]float64 // mode -> largest bill ratio
}

// CheckCache returns the rows that miss the gates.
func (r *Report) CheckCache(g Gates) []string {
	var out []string
	for _, row := range r.Rows {
		if row.Mode == "off" || row.Condensed == 0 {
			continue
		}
		id := row.Session + " " + row.Mode
		if row.PrefixStability < g.MinPrefix {
			out = append(out, fmt.Sprintf("%s: prefix stability %.3f < %.2f", id, row.PrefixStability, g.MinPrefix))
		}
		if max, ok := g.MaxBill[row.Mode]; ok && row.BillAnthropic > max {
			out = append(out, fmt.Sprintf("%s: bill %.3f of mode off > %.2f", id, row.BillAnthropic, max))
		}
	}
	return out
}

// CIGates are the bounds the CI's long session holds every mode to.
var CIGates = Gates{MinPrefix: 0.92, MaxBill: map[string]float64{
	"full-extractive": 0.55, "full-llm": 0.55, "selective": 0.55, "auto": 0.6,
}}
