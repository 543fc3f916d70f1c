package eval

import (
	"fmt"
	"html"
	"path/filepath"
	"regexp"
	"strings"
)

var unsafeName = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// ChartName is the file name of a session's chart: its file's name
// without the extension, and the form it was replayed in when not chat
// ("x.jsonl [gemini]": x-gemini.svg).
func ChartName(session string) string {
	form := ""
	if i := strings.LastIndex(session, " ["); i >= 0 && strings.HasSuffix(session, "]") {
		session, form = session[:i], "-"+session[i+2:len(session)-1]
	}
	return unsafeName.ReplaceAllString(strings.TrimSuffix(session, filepath.Ext(session))+form, "_") + ".svg"
}

var palette = map[string]string{
	"off":             "#444444",
	"full-extractive": "#1f77b4",
	"full-llm":        "#2ca02c",
	"selective":       "#9467bd",
	"auto":            "#ff7f0e",
}

// series is one line of a chart.
type series struct {
	label string
	color string
	width float64
	vals  []float64
}

// level is a horizontal line of a chart.
type level struct {
	label string
	color string
	v     float64
}

// lineChart draws lines over requests with levels, a legend on the right.
func lineChart(title, unit string, lines []series, levels []level) string {
	const w, h, left, right, top, bottom = 760, 320, 64, 150, 20, 36
	pw, ph := float64(w-left-right), float64(h-top-bottom)
	ymax, n := 1.0, 1
	for _, l := range levels {
		ymax = max(ymax, l.v*1.1)
	}
	for _, s := range lines {
		for _, v := range s.vals {
			ymax = max(ymax, v*1.05)
		}
		n = max(n, len(s.vals))
	}
	x := func(i int) float64 { return float64(left) + pw*float64(i)/float64(max(n-1, 1)) }
	y := func(v float64) float64 { return float64(top) + ph*(1-v/ymax) }
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="11">`+"\n", w, h, w, h)
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="white"/>`+"\n", w, h)
	fmt.Fprintf(&b, `<text x="%d" y="14" font-size="12">%s</text>`+"\n", left, html.EscapeString(title))
	for i := 0; i <= 4; i++ {
		v := ymax * float64(i) / 4
		fmt.Fprintf(&b, `<line x1="%d" x2="%.1f" y1="%.1f" y2="%.1f" stroke="#e5e5e5"/>`+"\n", left, float64(left)+pw, y(v), y(v))
		fmt.Fprintf(&b, `<text x="%d" y="%.1f" text-anchor="end">%dk%s</text>`+"\n", left-4, y(v)+4, int(v/1000), unit)
	}
	fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle">request (turn)</text>`+"\n", float64(left)+pw/2, h-6)
	// Levels; labels kept apart when the lines are close.
	labelY := -100.0
	for _, l := range levels {
		fmt.Fprintf(&b, `<line x1="%d" x2="%.1f" y1="%.1f" y2="%.1f" stroke="%s" stroke-dasharray="6 4"/>`+"\n", left, float64(left)+pw, y(l.v), y(l.v), l.color)
		ly := max(y(l.v)+4, labelY+13)
		labelY = ly
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" fill="%s">%s %dk</text>`+"\n", float64(left)+pw+4, ly, l.color, l.label, int(l.v/1000))
	}
	legendY := top + 40
	for _, s := range lines {
		if len(s.vals) == 0 {
			continue
		}
		var pts []string
		for i, v := range s.vals {
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", x(i), y(v)))
		}
		fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="%.1f" points="%s"/>`+"\n", s.color, s.width, strings.Join(pts, " "))
		fmt.Fprintf(&b, `<line x1="%.1f" x2="%.1f" y1="%d" y2="%d" stroke="%s" stroke-width="%.0f"/><text x="%.1f" y="%d">%s</text>`+"\n",
			float64(left)+pw+4, float64(left)+pw+24, legendY, legendY, s.color, max(s.width, 2), float64(left)+pw+28, legendY+4, html.EscapeString(s.label))
		legendY += 16
	}
	b.WriteString("</svg>\n")
	return b.String()
}

func (r *Report) rowsOf(session string) []Row {
	var rows []Row
	for _, row := range r.Rows {
		if row.Session == session {
			rows = append(rows, row)
		}
	}
	return rows
}

func modeColor(mode string) string {
	if c := palette[mode]; c != "" {
		return c
	}
	return "#17becf"
}

func floats(v []int) []float64 {
	out := make([]float64, len(v))
	for i, x := range v {
		out[i] = float64(x)
	}
	return out
}

// SVG draws, for one session, the tokens of each request as the agent sent
// it and as each mode forwarded it, with the window and the threshold.
func (r *Report) SVG(session string) string {
	rows := r.rowsOf(session)
	if len(rows) == 0 {
		return ""
	}
	lines := []series{{"sent by the agent", "#bbbbbb", 3, floats(rows[0].Sent)}}
	for _, row := range rows {
		if row.Mode != "off" {
			lines = append(lines, series{row.Mode, modeColor(row.Mode), 1.5, floats(row.Forwarded)})
		}
	}
	window := float64(rows[0].Window)
	return lineChart(session+" — tokens per request", "", lines,
		[]level{{"window", "#d62728", window}, {"threshold", "#e6a100", window * r.Threshold}})
}

// BillChartName is the file name of a session's bill chart.
func BillChartName(session string) string {
	return strings.TrimSuffix(ChartName(session), ".svg") + "-bill.svg"
}

// BillSVG draws, for one session, the Anthropic-style bill of each request
// in each mode (in thousands of fresh-input-token equivalents).
func (r *Report) BillSVG(session string) string {
	rows := r.rowsOf(session)
	if len(rows) == 0 {
		return ""
	}
	var lines []series
	for _, row := range rows {
		width := 1.5
		if row.Mode == "off" {
			width = 3
		}
		lines = append(lines, series{row.Mode, modeColor(row.Mode), width, row.BillSeries})
	}
	return lineChart(session+" — bill per request (Anthropic-style, input-token equivalents)", "", lines, nil)
}

// Sessions lists the sessions of the report, in order.
func (r *Report) Sessions() []string {
	var out []string
	seen := map[string]bool{}
	for _, row := range r.Rows {
		if !seen[row.Session] {
			seen[row.Session] = true
			out = append(out, row.Session)
		}
	}
	return out
}

func pct(f float64) string { return fmt.Sprintf("%.0f%%", 100*f) }

// Markdown renders the report; charts are linked from chartDir (relative to
// the Markdown file). command is the command that produced it.
func (r *Report) Markdown(chartDir, command string) string {
	var b strings.Builder
	b.WriteString("# Evaluation: condense-proxy on real and synthetic agent sessions\n\n")
	fmt.Fprintf(&b, "Generated %s by\n\n```sh\n%s\n```\n\n", r.Generated, command)
	b.WriteString(`Each session is replayed turn by turn through the real proxy (in process) against a strict fake
upstream that rejects what OpenAI rejects: request *k* is the history up to the *k*-th assistant message, as
the agent sent it. The proxy's background work (summaries prepared ahead) finishes before the next request
is sent, as an agent's turn gives it time to, so a replay gives the same result on every run. Modes: **off** (pass-through), **full-extractive** (summaries without an LLM),
**full-llm** (LLM summaries; ` + summaryWords(r.SummaryTokens) + `), **selective** (digests of old tool outputs), **auto** (selective, then full).
The threshold is ` + pct(r.Threshold) + ` of the window; condensing aims for 50%.

Columns: *sent* and *fwd* are tokens summed over all requests; *saved* is 1 − (forwarded + summarizer input) /
sent; *sum. calls* and *sum. tok* are summarizer calls and their input tokens; *hit* is the summary cache hit
rate over requests that used summaries; *prefix* is the average share of the previous forwarded request kept as
an identical prefix (provider prompt caches); *facts* are facts present in a condensed request as sent and still
present as forwarded (planted facts for synthetic sessions; for real sessions the task, the error lines that
commands printed and the paths in tool calls), with the share for selectively condensed requests in brackets;
*p50/p99* are request latencies through the proxy and *added* the p50 difference to mode off (negative when
the fake upstream, which parses every request, gets a much smaller body than in mode off).

`)
	b.WriteString("| session | window | mode | req | condensed | rejected | max fwd | sent | fwd | saved | sum. calls | sum. tok | hit | prefix | facts | p50 ms | p99 ms | added ms |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, row := range r.Rows {
		hit := "—"
		if row.CacheHitRate >= 0 {
			hit = pct(row.CacheHitRate)
		}
		facts := "—"
		if row.FactsSeen > 0 {
			facts = fmt.Sprintf("%s of %d", pct(float64(row.FactsKept)/float64(row.FactsSeen)), row.FactsSeen)
		}
		if row.SelectiveFactsSeen > 0 {
			facts += fmt.Sprintf(" (%s)", pct(float64(row.SelectiveFactsKept)/float64(row.SelectiveFactsSeen)))
		}
		fmt.Fprintf(&b, "| %s | %dk | %s | %d | %d | %d | %dk | %dk | %dk | %s | %d | %dk | %s | %.3f | %s | %.1f | %.1f | %+.1f |\n",
			row.Session, row.Window/1000, row.Mode, row.Requests, row.Condensed, row.Rejected, row.MaxForwarded/1000,
			row.TokensSent/1000, row.TokensForwarded/1000, pct(row.Saved), row.SummarizerCalls, row.SummarizerTokens/1000,
			hit, row.PrefixStability, facts, row.LatencyP50Ms, row.LatencyP99Ms, row.AddedP50Ms)
	}
	if len(r.Skipped) > 0 {
		b.WriteString("\nSkipped:\n\n")
		for _, s := range r.Skipped {
			fmt.Fprintf(&b, "- %s\n", s)
		}
	}
	if problems := append(r.Check(0.95), r.CheckCorpusBill(IssueGoals.AutoSlack)...); len(problems) > 0 {
		b.WriteString("\nChecks that failed:\n\n")
		for _, p := range problems {
			fmt.Fprintf(&b, "- %s\n", p)
		}
	} else {
		b.WriteString("\nEvery check passed: no rejected request, head and last message verbatim in every request, no condensed request over the window, selective condensing kept at least 95% of the facts in play, on the real sessions no mode billed more than mode off, auto kept at least 80% of the facts and billed at most what any of full-llm, full-extractive and selective that kept that much billed, plus 0.02.\n")
	}
	b.WriteString(factsMarkdown("## What the agent still knows", r.Rows))
	b.WriteString(`
## The bill

Providers bill a prompt prefix they have cached at a fraction of the input price, so what a mode saves in
money depends on how stable its prefix stays. *cached* is the share of forwarded tokens that a provider's
cache serves: each request's longest prefix identical to the conversation's previous request, counted when
at least 1024 tokens. *bill* is what the session costs in that mode as a ratio to mode off on the same
session (every request, plus the summarizer priced like the main model: its input at the input price, its
output at the output price; a summary asked in place reads the leading items it shares with a request
forwarded before it at the cached price, and the rest at the dearer of the input and write prices), under four pricings: **Anthropic-style** (cached prefix 0.1, the rest 1.25 —
a cache write —, output 5× input), **GPT-5.6** (OpenAI from the GPT-5.6 family on: reads 0.1, writes 1.25,
output 8× input), **OpenAI before GPT-5.6** (cached 0.5, writes free, output 4× input, as gpt-4o) and
**Gemini-style** (Gemini 2.5 Pro's implicit cache: cached 0.1 from 4,096 tokens, the rest 1, output 8× input);
*small summarizer* is Anthropic-style with condense.summary_model naming a small model priced at a third of
the main model (as Claude Haiku is of Sonnet). The replays plan with Anthropic's prices, which GPT-5.6's
equal, except in the Gemini form (*[gemini]*), where they plan with the registry's Gemini family (reads 0.1,
writes 1) and the Gemini-style bill is the one the checks hold.

| session | window | mode | prefix | cached | bill (Anthropic) | bill (GPT-5.6) | bill (OpenAI before 5.6) | bill (Gemini) | bill (small summarizer) | summarizer in (cached) / out |
|---|---|---|---|---|---|---|---|---|---|---|
`)
	for _, row := range r.Rows {
		bill := func(v float64) string {
			if v < 0 {
				return "—"
			}
			return fmt.Sprintf("%.2f", v)
		}
		fmt.Fprintf(&b, "| %s | %dk | %s | %.3f | %s | %s | %s | %s | %s | %s | %dk (%dk) / %dk |\n", row.Session, row.Window/1000, row.Mode,
			row.PrefixStability, pct(row.CachedShare), bill(row.BillAnthropic), bill(row.BillGPT56), bill(row.BillOpenAI), bill(row.BillGemini), bill(row.BillSmallSummarizer),
			row.SummarizerTokens/1000, row.SummarizerCached/1000, row.SummarizerOut/1000)
	}
	b.WriteString(r.keepAliveMarkdown())
	b.WriteString(r.coldMarkdown("## Cold turns over idle gaps"))
	if r.BillSuite != nil {
		b.WriteString(r.BillSuite.BillMarkdown())
	}
	b.WriteString("\n## Charts\n\nFor each session: tokens per request as the agent sent them (grey) and as each mode forwarded them, with the window and the threshold; then the bill of each request in each mode.\n\n")
	for _, s := range r.Sessions() {
		fmt.Fprintf(&b, "### %s\n\n![%s](%s)\n\n![%s bill](%s)\n\n", s, s, filepath.ToSlash(filepath.Join(chartDir, ChartName(s))),
			s, filepath.ToSlash(filepath.Join(chartDir, BillChartName(s))))
	}
	return b.String()
}

// keepAliveMarkdown is the keep-alive section: the sessions with idle gaps.
func (r *Report) keepAliveMarkdown() string {
	var b strings.Builder
	b.WriteString(`
## Keep-alive over idle gaps

The replay sends requests back to back; an agent that ends its turn waits for its user. Before each request
that follows a turn-ending answer a gap is drawn as agents' traffic shows them (a third pass 5 minutes, half
of those by less than 5 minutes more), and the session is priced Anthropic-style (a 5-minute cache) without
and with keep-alive's defaults (2 pings per gap, prompts from 4,096 tokens). *net saving* is the share of the
bill with the gaps that keep-alive saves, its pings paid (negative: they cost more than they saved).

| session | window | mode | idle gaps | net saving |
|---|---|---|---|---|
`)
	n := 0
	for _, row := range r.Rows {
		if row.IdleGaps == 0 {
			continue
		}
		n++
		fmt.Fprintf(&b, "| %s | %dk | %s | %d | %+.1f%% |\n", row.Session, row.Window/1000, row.Mode, row.IdleGaps, 100*row.KeepAliveSaving)
	}
	if n == 0 {
		return "\n## Keep-alive over idle gaps\n\nNo replayed session has a turn-ending answer followed by a user message: keep-alive would send nothing.\n"
	}
	return b.String()
}

// BillMarkdown renders a bill-suite report (condense-eval --suite bill):
// every session and mode with its bill in parts, and issue 18's goals.
func (r *Report) BillMarkdown() string {
	var b strings.Builder
	b.WriteString(`
## The bill suite

Generated sessions of about 1×, 2.5× and 10× a 128k window (two seeds each, chat completions), and one of 2.5×
in Claude Code's Messages form with thinking and in Codex's Responses form with reasoning; **every** request
replayed; threshold ` + pct(r.Threshold) + `, target 50%; the model priced Anthropic-style for the planner and the
bill (cache reads 0.1, writes 1.25, a 5-minute cache; output 5× input), the summarizer priced like the main model
(input 1, output 5) and answering with about 1,000 tokens that keep the transcript's facts (failing tests, errors,
decisions, edited paths — what the built-in prompt asks a model to keep). Modes: **full**, **selective**,
**auto**; **selective-eager** (selective.eager, at 2.5×); **auto-relevant** (memory.relevant_context, at 10×). *bill* is the session's bill as a share of the same session sent uncondensed; *reads*,
*writes* and *summ.* are its parts (cache reads, input written, the summarizer); *GPT-5.6* is the same replay
billed at OpenAI's prices from the GPT-5.6 family on (reads 0.1, writes 1.25, output 8× input); *avg fwd* is the average
forwarded request; *facts* are planted facts present in a condensed request as sent and still present as
forwarded, with the share over selectively condensed requests in brackets.

| session | format | × window | mode | req | max fwd | avg fwd | prefix | bill | reads | writes | summ. | GPT-5.6 | facts |
|---|---|---|---|---|---|---|---|---|---|---|---|---|---|
`)
	for _, row := range r.Rows {
		facts := "—"
		if row.FactsSeen > 0 {
			facts = fmt.Sprintf("%s of %d", pct(float64(row.FactsKept)/float64(row.FactsSeen)), row.FactsSeen)
		}
		if row.SelectiveFactsSeen > 0 {
			facts += fmt.Sprintf(" (%s)", pct(float64(row.SelectiveFactsKept)/float64(row.SelectiveFactsSeen)))
		}
		fmt.Fprintf(&b, "| %s | %s | %g | %s | %d | %dk | %dk | %.3f | %.2f | %.2f | %.2f | %.2f | %.2f | %s |\n", row.Session, row.Format, row.Length, row.Mode,
			row.Requests, row.MaxForwarded/1000, row.ForwardedAvg/1000, row.PrefixStability, row.BillAnthropic, row.BillReads, row.BillWrites, row.BillSummarizer, row.BillGPT56, facts)
	}
	if problems := r.CheckBill(IssueGoals); len(problems) > 0 {
		b.WriteString("\nGoals missed (issue 18's, and issue 21's for the relevant-context block):\n\n")
		for _, p := range problems {
			fmt.Fprintf(&b, "- %s\n", p)
		}
	} else {
		b.WriteString("\nEvery goal of issue 18 that this suite measures is met.\n")
	}
	if r.Command != "" {
		fmt.Fprintf(&b, "\nGenerated by `%s`.\n", r.Command)
	}
	b.WriteString(factsMarkdown("### What the agent still knows in the bill suite", r.Rows))
	b.WriteString(r.coldMarkdown("### Cold turns in the bill suite"))
	return b.String()
}

// coldMarkdown is the cold-turn section, under heading: the chat rows
// priced with the idle gaps, without and with cold turns.
func (r *Report) coldMarkdown(heading string) string {
	var b strings.Builder
	b.WriteString("\n" + heading + "\n\n")
	b.WriteString(`Idle gaps are drawn as keep-alive's are (a 5-minute cache), before every request that carries a user message
after the agent's last step — after a turn-ending answer, or a follow-up while the agent worked (the generated
sessions' only kind); *past TTL* are the gaps longer than the cache's lifetime, after which a request writes its
whole prompt again. Each chat session is replayed twice more, the proxy's engine on a clock moved by the gaps:
*bill, gaps* with cold turns off (condense.cold_turns: false), *bill, cold turns* with them on — after a gap past
the cache's lifetime a request over the threshold is condensed to the target and the warm requests after it keep
its prefix; both as ratios to mode off's bill with the same gaps. *cold* is the requests condensed cold; *facts*
are kept by kind in each replay (as in *What the agent still knows*).

| session | window | mode | idle gaps | past TTL | cold | bill, gaps | bill, cold turns | facts, gaps | facts, cold turns |
|---|---|---|---|---|---|---|---|---|---|
`)
	n := 0
	for _, row := range r.Rows {
		if row.BillIdle < 0 || row.BillCold < 0 || row.Mode == "off" {
			continue
		}
		n++
		idle, cold := Row{FactsByKind: row.IdleFactsByKind}, Row{FactsByKind: row.ColdFactsByKind}
		fmt.Fprintf(&b, "| %s | %dk | %s | %d | %d | %d | %.3f | %.3f | %s | %s |\n", row.Session, row.Window/1000, row.Mode,
			row.ColdIdleGaps, row.ColdGaps, row.ColdTurns, row.BillIdle, row.BillCold, idle.FactsByKindText(), cold.FactsByKindText())
	}
	if n == 0 {
		return "\n" + heading + "\n\nNo chat session was replayed in a mode that condenses, beside mode off.\n"
	}
	return b.String()
}

// summaryWords says what the fake summarizer answered in a report.
func summaryWords(tokens int) string {
	if tokens <= 0 {
		return "the fake answers with a short canned text, so this row measures mechanics, not summary quality, and understates what summaries cost"
	}
	return fmt.Sprintf("the fake answers with summaries of about %d tokens that keep the facts of what they summarize, the size of a model's summary, so this row measures cost and mechanics, not summary quality", tokens)
}
