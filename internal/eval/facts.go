package eval

import (
	"fmt"
	"slices"
	"strings"
)

// kindOrder is the order kinds are listed in: real sessions' kinds, then
// the generated sessions' own; others after, by name.
var kindOrder = []string{"task", "decision", "error", "failing-test", "path", "edited-path"}

// kinds returns the kinds of row's facts, in kindOrder.
func (row *Row) kinds() []string {
	var out, rest []string
	for _, k := range kindOrder {
		if _, ok := row.FactsByKind[k]; ok {
			out = append(out, k)
		}
	}
	for k := range row.FactsByKind {
		if !slices.Contains(kindOrder, k) {
			rest = append(rest, k)
		}
	}
	slices.Sort(rest)
	return append(out, rest...)
}

// FactsByKindText is a row's facts kept per kind: "task 100% of 12 ·
// error 71% of 45 · path 88% of 120"; "—" when no fact was at stake.
func (row *Row) FactsByKindText() string {
	var parts []string
	for _, k := range row.kinds() {
		c := row.FactsByKind[k]
		if c.Seen == 0 {
			continue
		}
		parts = append(parts, fmt.Sprintf("%s %s of %d", k, pct(float64(c.Kept)/float64(c.Seen)), c.Seen))
	}
	if len(parts) == 0 {
		return "—"
	}
	return strings.Join(parts, " · ")
}

// RecallText is a row's recall probes: "top-3 85% of 40 (error 70% of 10
// · path 93% of 30)"; "—" when no fact was condensed away.
func (row *Row) RecallText() string {
	if row.RecallProbes == 0 {
		return "—"
	}
	var parts []string
	for _, k := range row.kinds() {
		if c := row.FactsByKind[k]; c.Probes > 0 {
			parts = append(parts, fmt.Sprintf("%s %s of %d", k, pct(float64(c.Recalled)/float64(c.Probes)), c.Probes))
		}
	}
	return fmt.Sprintf("top-3 %s of %d (%s)", pct(float64(row.RecallTop3)/float64(row.RecallProbes)), row.RecallProbes, strings.Join(parts, " · "))
}

// factsMarkdown is the section on what the agent still knows, under
// heading: the rows with facts at stake, their facts kept per kind and
// their recall probes.
func factsMarkdown(heading string, rows []Row) string {
	var b strings.Builder
	b.WriteString("\n" + heading + "\n\n")
	b.WriteString(`*facts kept by kind* splits the *facts* column by kind (real sessions: the task, the error lines commands
printed, the paths in tool calls; generated sessions: the task, failing tests, error lines, edited paths and
decisions planted in them): present in a condensed request as sent, and still present as forwarded. Real
sessions add their *decisions*, shown here only (not in the *facts* column): the first sentence, of 30 to 160
characters, of each assistant message whose tool calls change a file. *recall*
probes each distinct fact condensed away once, after the request that first dropped it: the conversation's
memory (fed by the proxy, not used for the forwarded requests) is searched as the condense_recall tool
searches it, with the fact's first 12 words as the query; a probe succeeds when a step holding the fact is
among the 3 best results.

| session | window | mode | facts kept by kind | recall |
|---|---|---|---|---|
`)
	n := 0
	for _, row := range rows {
		if row.FactsSeen == 0 {
			continue
		}
		n++
		fmt.Fprintf(&b, "| %s | %dk | %s | %s | %s |\n", row.Session, row.Window/1000, row.Mode, row.FactsByKindText(), row.RecallText())
	}
	if n == 0 {
		return "\n" + heading + "\n\nNo condensed request had a fact at stake.\n"
	}
	return b.String()
}
