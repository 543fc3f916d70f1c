package eval

import (
	"fmt"
	"sort"
	"strings"
)

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
	// MinPrefix is the shortest prefix the provider caches; 0:
	// minCachedPrefix.
	MinPrefix int
}

// Pricings are the bills reported: Anthropic-style (cache reads at 0.1,
// cache writes at 1.25 of the input price; output 5× input, as for Claude
// Sonnet), OpenAI before GPT-5.6 (cached input at 0.5, writes free;
// output 4× input, as for gpt-4o), Anthropic-style with
// condense.summary_model naming a small model (a third of the main
// model's prices, as Claude Haiku is of Sonnet's), OpenAI from GPT-5.6
// on (reads 0.1, writes 1.25, as the registry's openAI56Tiers; output 8×
// input, as for the GPT-5 family), and Gemini-style (the registry's
// family for gemini-2.5-pro, the model the Gemini form names: implicit
// cache reads at 0.1, no write premium, prefixes from 4096 tokens;
// output 8× input, $10 to $1.25).
var Pricings = []Pricing{
	{Name: "anthropic", Cached: 0.1, Fresh: 1.25, SummaryIn: 1, SummaryOut: 5},
	{Name: "openai", Cached: 0.5, Fresh: 1, SummaryIn: 1, SummaryOut: 4},
	{Name: "anthropic-small-summarizer", Cached: 0.1, Fresh: 1.25, SummaryIn: 1.0 / 3, SummaryOut: 5.0 / 3},
	{Name: "openai-gpt-5.6", Cached: 0.1, Fresh: 1.25, SummaryIn: 1, SummaryOut: 8},
	{Name: "gemini", Cached: 0.1, Fresh: 1, SummaryIn: 1, SummaryOut: 8, MinPrefix: 4096},
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
	if c < p.MinPrefix {
		c = 0
	}
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
		r.BillAnthropic, r.BillOpenAI, r.BillSmallSummarizer, r.BillGPT56, r.BillGemini = -1, -1, -1, -1, -1
		r.BillIdle, r.BillCold = -1, -1
		o, ok := off[r.Session]
		if !ok {
			continue
		}
		if o.billIdle > 0 && r.billIdle >= 0 {
			r.BillIdle = r.billIdle / o.billIdle
			if r.billCold >= 0 {
				r.BillCold = r.billCold / o.billIdle
			}
		}
		if o.billAnthropic > 0 {
			r.BillAnthropic = r.billAnthropic / o.billAnthropic
			r.BillReads, r.BillWrites, r.BillSummarizer = r.reads/o.billAnthropic, r.writes/o.billAnthropic, r.sumBill/o.billAnthropic
		}
		if o.billOpenAI > 0 {
			r.BillOpenAI = r.billOpenAI / o.billOpenAI
		}
		if o.billSmall > 0 {
			r.BillSmallSummarizer = r.billSmall / o.billSmall
		}
		if o.billGPT56 > 0 {
			r.BillGPT56 = r.billGPT56 / o.billGPT56
		}
		if o.billGemini > 0 {
			r.BillGemini = r.billGemini / o.billGemini
		}
	}
}

// BillGoals are issue 18's goals for the bill suite (every request
// replayed, Anthropic-style prices, the summarizer priced like the main
// model), by session length in windows.
type BillGoals struct {
	// MinPrefix is the least prefix stability of full, selective and
	// auto on chat sessions; MinPrefixThinking of full and auto on
	// Messages sessions with thinking and Responses sessions with
	// reasoning.
	MinPrefix, MinPrefixThinking float64
	// MaxAt25 bounds each mode's bill at about 2.5× the window.
	MaxAt25 map[string]float64
	// AutoSlack: auto's bill is at most the cheaper of full and selective
	// plus this, at every length.
	AutoSlack float64
	// EagerMinFacts is the least share of planted facts selective-eager
	// keeps.
	EagerMinFacts float64
	// RelevantGain is how much larger a share of planted facts auto
	// keeps with the relevant-context block (auto-relevant) than
	// without, at least (issue 21's goal), its prefix stability still
	// at least MinPrefix; where auto lost less than that, the share
	// auto keeps or RelevantFloor, the smaller.
	RelevantGain float64
	// RelevantFloor is the least share of planted facts the block may
	// leave where auto alone loses less than RelevantGain (issue 39's
	// floor for auto): the block's room comes from the verbatim steps,
	// and stand-ins that keep the facts leave it little to bring back.
	RelevantFloor float64
}

// IssueGoals are the goals issue 18 sets, and issue 21's for the
// relevant-context block.
var IssueGoals = BillGoals{
	MinPrefix: 0.95, MinPrefixThinking: 0.90,
	MaxAt25:   map[string]float64{"auto": 0.50, "full": 0.45, "selective": 0.65, "selective-eager": 0.30},
	AutoSlack: 0.02, EagerMinFacts: 0.95, RelevantGain: 0.10, RelevantFloor: 0.90,
}

// relevantLeast is the least share of planted facts auto-relevant must
// keep where auto keeps plain: the gain over plain; where auto lost less
// than the gain (the block cannot bring it back), plain or the floor,
// the smaller.
func (g BillGoals) relevantLeast(plain float64) float64 {
	if 1-plain < g.RelevantGain {
		return min(plain, g.RelevantFloor)
	}
	return plain + g.RelevantGain
}

// CheckBill returns the rows of a bill-suite report that miss g.
func (r *Report) CheckBill(g BillGoals) []string {
	var out []string
	bills := map[string]map[string]float64{} // session+format → mode → bill
	facts := map[string]map[string]float64{} // session+format → mode → share of facts kept
	for _, row := range r.Rows {
		if row.Mode == "off" || row.Length == 0 {
			continue
		}
		id := labelOf(row.Session, row.Format) + " " + row.Mode
		thinking := row.Format != "chat"
		switch {
		case !thinking && (row.Mode == "full" || row.Mode == "selective" || row.Mode == "auto") && row.PrefixStability < g.MinPrefix:
			out = append(out, fmt.Sprintf("%s: prefix stability %.3f < %.2f", id, row.PrefixStability, g.MinPrefix))
		case thinking && (row.Mode == "full" || row.Mode == "auto") && row.PrefixStability < g.MinPrefixThinking:
			out = append(out, fmt.Sprintf("%s: prefix stability %.3f < %.2f", id, row.PrefixStability, g.MinPrefixThinking))
		}
		if max, ok := g.MaxAt25[row.Mode]; ok && row.Length == 2.5 && !thinking && row.BillAnthropic > max {
			out = append(out, fmt.Sprintf("%s: bill %.3f > %.2f at 2.5× the window", id, row.BillAnthropic, max))
		}
		if row.Mode == "selective-eager" && row.FactsSeen > 0 && float64(row.FactsKept) < g.EagerMinFacts*float64(row.FactsSeen) {
			out = append(out, fmt.Sprintf("%s: kept %d of %d planted facts", id, row.FactsKept, row.FactsSeen))
		}
		if row.Mode == "selective-eager" && row.LastLost > 0 {
			out = append(out, fmt.Sprintf("%s: last message lost in %d requests", id, row.LastLost))
		}
		if row.Mode == "auto-relevant" && row.PrefixStability < g.MinPrefix {
			out = append(out, fmt.Sprintf("%s: prefix stability %.3f < %.2f", id, row.PrefixStability, g.MinPrefix))
		}
		key := row.Session + "\x00" + row.Format
		if bills[key] == nil {
			bills[key] = map[string]float64{}
			facts[key] = map[string]float64{}
		}
		bills[key][row.Mode] = row.BillAnthropic
		if row.FactsSeen > 0 {
			facts[key][row.Mode] = float64(row.FactsKept) / float64(row.FactsSeen)
		}
	}
	for key, f := range facts {
		plain, ok := f["auto"]
		with, okR := f["auto-relevant"]
		if least := g.relevantLeast(plain); ok && okR && with < least {
			session, format, _ := strings.Cut(key, "\x00")
			out = append(out, fmt.Sprintf("%s auto-relevant: planted facts kept %.1f%%, auto %.1f%%: under %.1f%%", labelOf(session, format), 100*with, 100*plain, 100*least))
		}
	}
	for key, b := range bills {
		if !strings.HasSuffix(key, "\x00chat") {
			continue // the goal is set for the chat sessions (and the corpus, CheckCorpusBill)
		}
		full, okF := b["full"]
		sel, okS := b["selective"]
		auto, okA := b["auto"]
		if okF && okS && okA && auto > min(full, sel)+g.AutoSlack {
			session, format, _ := strings.Cut(key, "\x00")
			out = append(out, fmt.Sprintf("%s: auto's bill %.3f > min(full %.3f, selective %.3f) + %.2f", labelOf(session, format), auto, full, sel, g.AutoSlack))
		}
	}
	sort.Strings(out)
	return out
}

// Bill is the row's bill of record, as a ratio to mode off: Gemini-style
// for the Gemini form (the prices its planner plans with), Anthropic-style
// for the others.
func (r Row) Bill() float64 {
	if r.Format == "gemini" {
		return r.BillGemini
	}
	return r.BillAnthropic
}

// CheckCorpusBill returns the corpus sessions of a default-suite report
// that miss issue 18's goals as issue 39 restates them: no mode above mode
// off, and auto's bill (Row.Bill) at most the cheapest of full-llm's,
// full-extractive's and selective's plus slack — among those that keep at
// least MinCorpusFacts of the facts in play: a mode that is cheaper by
// forgetting is not one auto must match.
func (r *Report) CheckCorpusBill(slack float64) []string {
	var out []string
	type key struct{ session, format string }
	type mode struct {
		bill  float64
		facts float64 // share of the facts kept; 1 when none was in play
	}
	modes := map[key]map[string]mode{}
	for _, row := range r.Rows {
		if strings.HasPrefix(row.Session, "synthetic-") || row.Mode == "off" || row.Bill() < 0 {
			continue
		}
		k := key{row.Session, row.Format}
		if modes[k] == nil {
			modes[k] = map[string]mode{}
		}
		m := mode{bill: row.Bill(), facts: 1}
		if row.FactsSeen > 0 {
			m.facts = float64(row.FactsKept) / float64(row.FactsSeen)
		}
		modes[k][row.Mode] = m
		if m.bill > 1 {
			out = append(out, fmt.Sprintf("%s %s: bill %.3f > 1, above mode off", labelOf(row.Session, row.Format), row.Mode, m.bill))
		}
	}
	for k, ms := range modes {
		auto, ok := ms["auto"]
		if !ok {
			continue
		}
		for _, name := range []string{"full-llm", "full-extractive", "selective"} {
			if m, ok := ms[name]; ok && m.facts >= MinCorpusFacts && auto.bill > m.bill+slack {
				out = append(out, fmt.Sprintf("%s: auto's bill %.3f > %s's %.3f + %.2f (%s keeps %.0f%% of the facts, auto %.0f%%)",
					labelOf(k.session, k.format), auto.bill, name, m.bill, slack, name, 100*m.facts, 100*auto.facts))
			}
		}
		if auto.facts < MinCorpusFacts {
			out = append(out, fmt.Sprintf("%s: auto keeps %.0f%% of the facts, under %.0f%%", labelOf(k.session, k.format), 100*auto.facts, 100*MinCorpusFacts))
		}
	}
	sort.Strings(out)
	return out
}

// MinCorpusFacts is the share of the facts in play auto keeps on every
// condensed corpus session (issue 39).
const MinCorpusFacts = 0.80

// labelOf names a session in a form in the checks' lines: "x [chat]";
// a native form's session is named so already ("x [gemini]").
func labelOf(session, format string) string {
	if form := " [" + format + "]"; !strings.HasSuffix(session, form) {
		return session + form
	}
	return session
}
