package memory

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/condense-proxy/condense-proxy/condense"
	"github.com/condense-proxy/condense-proxy/view"
)

// ToolName is the recall tool's name.
const ToolName = "condense_recall"

// ToolDescription and ToolSchema describe the recall tool to the model.
// They never change between requests: the tool is byte-identical in every
// request that carries it, so it never busts a prompt cache.
const (
	ToolDescription = "Recall earlier parts of this conversation that were condensed away to fit the context window " +
		"(summarized, digested or omitted). Give `query` (words, names, paths, error text) to search them, " +
		"or `id` to get back one original named by a summary, digest or omission marker. Answered by the proxy, not by the user."
	ToolSchema = `{"type":"object","properties":{"query":{"type":"string","description":"What to look for in the condensed-away history."},"id":{"type":"string","description":"The id of a summary, digest or omission marker, or of a recalled step."}}}`
)

// Tool is the recall tool as the proxy adds it to requests.
var Tool = view.Tool{Name: ToolName, Description: ToolDescription, Schema: ToolSchema}

// Limits of a recall request.
const (
	// MaxQueryBytes bounds a query (longer ones are cut, and the answer
	// says so).
	MaxQueryBytes = 1000
	// maxHits is how many items a query answer lists at most.
	maxHits = 5
	// maxRelevant is how many steps the relevant-context block lists at
	// most (each cut to its key lines; the budget is the bound in use).
	maxRelevant = 200
)

// validID is what ids of originals, summaries and steps look like.
var validID = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// Outcomes of a recall.
const (
	OutcomeFound   = "found"
	OutcomeNone    = "none"    // a query that matched nothing
	OutcomeUnknown = "unknown" // an id not in the caller's conversation
	OutcomeInvalid = "invalid" // arguments the tool does not take
)

// Recalled is one recall the proxy answered: what was asked, what came
// back.
type Recalled struct {
	Query string `json:"query,omitempty"`
	ID    string `json:"id,omitempty"`
	// Outcome is one of the Outcome constants.
	Outcome string `json:"outcome"`
	// Items are the ids of the items returned.
	Items []string `json:"items,omitempty"`
	// Answer is the tool result given to the model.
	Answer string `json:"answer"`
}

// Recall answers one condense_recall call of the caller's conversation:
// args is the call's arguments (JSON text). Every input gets an answer for
// the model — bad input an answer saying what was wrong — never an error.
// budget bounds the answer in tokens.
func (m *Memory) Recall(ctx context.Context, scope, conversation, args string, budget int, creds http.Header) Recalled {
	var a struct {
		Query any `json:"query"`
		ID    any `json:"id"`
	}
	if err := json.Unmarshal([]byte(args), &a); err != nil {
		return Recalled{Outcome: OutcomeInvalid, Answer: ToolName + ": the arguments must be a JSON object with `query` (text to search for) or `id` (an id a summary, digest or marker names)."}
	}
	query, qok := a.Query.(string)
	id, iok := a.ID.(string)
	query, id = strings.TrimSpace(query), strings.TrimSpace(id)
	if (a.Query != nil && !qok) || (a.ID != nil && !iok) || (query == "" && id == "") {
		return Recalled{Outcome: OutcomeInvalid, Answer: ToolName + ": give `query` (text to search this conversation's condensed-away history for) or `id` (an id a summary, digest or marker names), as strings."}
	}
	if id != "" {
		return m.recallID(ctx, scope, conversation, id, budget)
	}
	return m.recallQuery(ctx, scope, conversation, query, budget, creds)
}

func (m *Memory) recallID(ctx context.Context, scope, conversation, id string, budget int) Recalled {
	r := Recalled{ID: id}
	if !validID.MatchString(id) {
		r.ID = clip(id, 80)
		r.Outcome = OutcomeInvalid
		r.Answer = fmt.Sprintf("%s: %q is not an id; ids are the hex strings summaries, digests and markers name (id=\"…\").", ToolName, r.ID)
		return r
	}
	items := m.Lookup(ctx, scope, conversation, id)
	if len(items) == 0 {
		r.Outcome = OutcomeUnknown
		r.Answer = fmt.Sprintf("%s: nothing under id %s in this conversation's condensed-away history (it may have expired, or belong to another conversation); try `query`.", ToolName, id)
		return r
	}
	r.Outcome = OutcomeFound
	hits := make([]Hit, len(items))
	for i, it := range items {
		hits[i] = Hit{Item: it}
	}
	head := fmt.Sprintf("%s: id %s holds %d item(s) of this conversation's condensed-away history, oldest first.", ToolName, id, len(items))
	r.Answer, r.Items = m.render(head, hits, budget)
	return r
}

func (m *Memory) recallQuery(ctx context.Context, scope, conversation, query string, budget int, creds http.Header) Recalled {
	note := ""
	if len(query) > MaxQueryBytes {
		cut := MaxQueryBytes
		for cut > 0 && !utf8.RuneStart(query[cut]) {
			cut--
		}
		query = query[:cut]
		note = fmt.Sprintf(" (the query was cut to its first %d bytes)", MaxQueryBytes)
	}
	r := Recalled{Query: query}
	hits := m.Search(ctx, scope, conversation, query, maxHits, creds)
	if len(hits) == 0 {
		r.Outcome = OutcomeNone
		r.Answer = fmt.Sprintf("%s: nothing in this conversation's condensed-away history matches %q%s.", ToolName, clip(query, 200), note)
		return r
	}
	r.Outcome = OutcomeFound
	head := fmt.Sprintf("%s: %d result(s) for %q%s from this conversation's condensed-away history, best first.", ToolName, len(hits), clip(query, 200), note)
	r.Answer, r.Items = m.renderFor(head, hits, budget, query)
	return r
}

// excerpt cuts text to about room tokens: its first line, then the lines
// that hold the most of query's terms (rarest first), in their order,
// with "[…]" where lines were left out; without a query, its start.
func (m *Memory) excerpt(text, query string, room int) string {
	if room <= 0 {
		return ""
	}
	lines := strings.Split(text, "\n")
	qs := map[string]bool{}
	for _, t := range terms(query) {
		qs[t] = true
	}
	score := make([]int, len(lines))
	for i, l := range lines {
		seen := map[string]bool{}
		for _, t := range terms(l) {
			if qs[t] && !seen[t] {
				seen[t] = true
				score[i]++
			}
		}
	}
	order := make([]int, len(lines))
	for i := range order {
		order[i] = i
	}
	keep := map[int]bool{0: true}
	used := m.opts.Count(lines[0])
	if len(qs) > 0 {
		sort.SliceStable(order, func(a, b int) bool { return score[order[a]] > score[order[b]] })
	}
	for _, i := range order {
		if keep[i] || len(qs) > 0 && score[i] == 0 {
			continue
		}
		n := m.opts.Count(lines[i]) + 1
		if used+n > room {
			if len(qs) > 0 {
				continue
			}
			break
		}
		keep[i] = true
		used += n
	}
	var b strings.Builder
	gap := false
	for i, l := range lines {
		if !keep[i] {
			gap = true
			continue
		}
		if gap && b.Len() > 0 {
			b.WriteString("[…]\n")
		}
		gap = false
		if len(l) > 4*room {
			l = clip(l, 4*room)
		}
		b.WriteString(l)
		b.WriteString("\n")
	}
	if gap {
		b.WriteString("[…]")
	}
	return strings.TrimRight(b.String(), "\n")
}

// minSaying is the length from which an assistant's line is a key line
// ("Run the tests." is not; "I will change x.go because…" is).
const minSaying = 60

// keyLine matches a line that reports an outcome: a failing test, what a
// runtime, compiler or test runner printed when something went wrong, a
// test's failure message (an indented file:line:), an edit made.
var keyLine = regexp.MustCompile(`^(?:\s*(?:--- FAIL:|FAIL:|FAILED\s|panic:|fatal error:|Traceback \(most recent call last\)|E\s{2,}\S|\w+(?:\.\w+)*(?:Error|Exception):)|\s+\S+:\d+: |\S+:\d+(?::\d+)?:\s*(?:fatal\s+)?error:|error(?:\[\w+\])?:\s)|has been (?:edited|created|written)|^\[tool call[^\]]*\] \w*(?:edit|write|create|replace|patch)\w*\(`)

// keyLines returns the indexes of a step's key lines: those keyLine
// matches, and the assistant's own words when they say more than a
// stock phrase (the first line after an "[assistant]" marker, of at
// least minSaying characters: what it decided and why).
func keyLines(lines []string) []int {
	var out []int
	for i := range lines {
		if isKey(lines, i) {
			out = append(out, i)
		}
	}
	return out
}

// isKey reports whether lines[i] is a key line (keyLines).
func isKey(lines []string, i int) bool {
	return keyLine.MatchString(lines[i]) || i > 0 && lines[i-1] == "[assistant]" && len(strings.TrimSpace(lines[i])) >= minSaying
}

// actLine matches a key line that records an act rather than what was
// found or decided: a tool call, a file "has been edited".
var actLine = regexp.MustCompile(`^\[tool call[^\]]*\] |has been (?:edited|created|written)`)

// isAct reports whether a key line records an act (actLine).
func isAct(line string) bool { return actLine.MatchString(line) }

// fileName matches a file's name or path in a line ("pkg/a/b.go",
// "README.md").
var fileName = regexp.MustCompile(`[\w.-]*(?:/[\w.-]+)*\.[A-Za-z]\w{0,9}\b`)

// namedAlready reports whether line names files and text names each of
// them.
func namedAlready(line, text string) bool {
	names := fileName.FindAllString(line, -1)
	if len(names) == 0 {
		return false
	}
	for _, n := range names {
		if !strings.Contains(text, n) {
			return false
		}
	}
	return true
}

// established reports whether a step's text holds a key line: whether the
// step established something (it stops at the first).
func established(text string) bool {
	lines := strings.Split(text, "\n")
	for i := range lines {
		if isKey(lines, i) {
			return true
		}
	}
	return false
}

// render writes hits as a recall answer within budget tokens: each item
// in a <recalled> block naming its id and place; texts that do not fit
// are cut (the first item's at least in part), and what was left out is
// said.
func (m *Memory) render(head string, hits []Hit, budget int) (string, []string) {
	return m.renderFor(head, hits, budget, "")
}

// renderFor is render, cutting texts that do not fit to the lines that
// best match query (all when query is empty: the text's start).
func (m *Memory) renderFor(head string, hits []Hit, budget int, query string) (string, []string) {
	if budget <= 0 {
		budget = 2000
	}
	var b strings.Builder
	b.WriteString(head)
	b.WriteString("\n")
	used := m.opts.Count(head)
	var ids []string
	for i, h := range hits {
		open := fmt.Sprintf("<recalled id=%q kind=%q place=%q>\n", h.Item.ID, h.Item.Kind, describe(h.Item))
		closing := "\n</recalled>\n"
		room := budget - used - m.opts.Count(open+closing)
		if room < 40 {
			fmt.Fprintf(&b, "[%d more item(s) left out to fit the answer; ask by id or narrow the query]\n", len(hits)-i)
			break
		}
		text := h.Item.Text
		if n := m.opts.Count(text); n > room {
			text = m.excerpt(text, query, room-m.opts.Count("[… cut to fit; recall id 0123456789abcdef0123456789abcdef for this item alone]")-2)
			text += fmt.Sprintf("\n[… cut to fit; recall id %s for this item alone]", h.Item.ID)
		}
		b.WriteString(open)
		b.WriteString(text)
		b.WriteString(closing)
		used += m.opts.Count(open + text + closing)
		ids = append(ids, h.Item.ID)
	}
	return strings.TrimRight(b.String(), "\n"), ids
}

// clip cuts s to at most n bytes, on a rune boundary.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// Relevant is RelevantContext for the steps ending at or before item
// before that best match focus, with nothing known besides.
func (m *Memory) Relevant(ctx context.Context, scope, conversation, focus string, before, budget int, creds http.Header) string {
	return m.RelevantContext(ctx, condense.RelevantQuery{Scope: scope, Conversation: conversation, Focus: focus,
		Before: before, Budget: budget, Creds: creds})
}

// RelevantContext implements condense.Memory: the steps of the
// conversation's memory that end at or before item q.Before (condensed
// away, not still in the request) and best match q.Focus, rendered within
// q.Budget tokens as a block naming their ids, best first; "" when none
// matches.
//
// The block carries what the steps established, densely: the steps that
// hold a key line (a failing test and its message, an error, an edit, the
// assistant's decision) come first, each as its id and those lines alone
// — not a line the note already says (q.Known: its summaries) or an
// earlier step of the block said — so that many steps fit; a step whose
// key lines are all said already is left out. Steps without a key line
// follow, cut to the lines that best match the focus.
func (m *Memory) RelevantContext(ctx context.Context, q condense.RelevantQuery) string {
	focus := q.Focus
	if q.Budget <= 0 || strings.TrimSpace(focus) == "" {
		return ""
	}
	if len(focus) > 4*MaxQueryBytes {
		focus = clip(focus, 4*MaxQueryBytes)
	}
	var hits []Hit
	for _, h := range m.Search(ctx, q.Scope, q.Conversation, focus, maxCandidates, q.Creds) {
		if h.Item.Kind == condense.MemoryStep && h.Item.To <= q.Before {
			hits = append(hits, h)
		}
	}
	if len(hits) == 0 {
		return ""
	}
	// The steps that established something first, each in the search's
	// order: what an agent most needs back of its past.
	var first, rest []Hit
	for _, h := range hits {
		if established(h.Item.Text) {
			first = append(first, h)
		} else {
			rest = append(rest, h)
		}
	}
	head := "<relevant-earlier-context>\nWhat earlier steps of this conversation, condensed away above, established that bears on the current work (best first; each step's key lines, under its id):\n"
	tail := "</relevant-earlier-context>"
	budget := q.Budget - relevantSlack
	used := m.opts.Count(head) + m.opts.Count(tail)
	said := newSaid(q.Known)
	var b strings.Builder
	b.WriteString(head)
	steps := 0
	for _, h := range first {
		if steps == maxRelevant {
			break
		}
		open := fmt.Sprintf("[step %s]\n", shortID(h.Item.ID))
		room := min(budget-used-m.opts.Count(open), keyedStepTokens)
		if room < minStepRoom {
			break
		}
		text, n := m.keyExcerpt(h.Item.Text, focus, room, said)
		if text == "" {
			continue
		}
		b.WriteString(open)
		b.WriteString(text)
		used += m.opts.Count(open) + n
		steps++
	}
	for _, h := range rest {
		if steps == maxRelevant {
			break
		}
		open := fmt.Sprintf("[step %s]\n", shortID(h.Item.ID))
		room := min(budget-used-m.opts.Count(open), max(q.Budget/8, 40))
		if room < minStepRoom {
			break
		}
		text := h.Item.Text
		if m.opts.Count(text) > room {
			note := fmt.Sprintf("[… cut to fit; recall id %s for this step alone]", shortID(h.Item.ID))
			text = m.excerpt(text, focus, room-m.opts.Count(note)-2) + "\n" + note
		}
		text += "\n"
		b.WriteString(open)
		b.WriteString(text)
		used += m.opts.Count(open + text)
		steps++
	}
	if steps == 0 {
		return ""
	}
	b.WriteString(tail)
	return b.String()
}

// Bounds of the relevant-context block.
const (
	// keyedStepTokens bounds what the block carries of one step that
	// established something: its most telling key lines (those sharing
	// the most of the focus, then the first), about two lines — many
	// steps in brief rather than a few whole; the recall tool has the
	// rest.
	keyedStepTokens = 48
	// maxCandidates is how many search hits the block chooses from.
	maxCandidates = 1000
	// minStepRoom: a step is not begun in less room (tokens).
	minStepRoom = 20
	// relevantSlack is kept free of the budget: counts of parts do not
	// add up exactly to the count of the whole.
	relevantSlack = 16
	// maxKeyLineBytes bounds one key line in the block.
	maxKeyLineBytes = 400
)

// said is what a relevant-context block has said, or the note it goes in
// says: lines (white space folded) a step's excerpt need not repeat.
type said struct {
	known string
	lines map[string]bool
}

func newSaid(known string) *said {
	return &said{known: foldSpace(known), lines: map[string]bool{}}
}

// has reports whether line was said.
func (s *said) has(line string) bool {
	l := foldSpace(line)
	return s.lines[l] || len(l) >= 8 && strings.Contains(s.known, l)
}

func foldSpace(s string) string { return strings.Join(strings.Fields(s), " ") }

// keyExcerpt returns the key lines of a step's text not said yet, in
// their order, within room tokens (when not all fit, those that share the
// most of focus's terms), each on its own line, and their token count;
// the lines returned are said from then on. "" when there is none left.
func (m *Memory) keyExcerpt(text, focus string, room int, s *said) (string, int) {
	lines := strings.Split(text, "\n")
	var cand []int
	for _, i := range keyLines(lines) {
		if strings.TrimSpace(lines[i]) != "" && !s.has(lines[i]) {
			cand = append(cand, i)
		}
	}
	if len(cand) == 0 {
		return "", 0
	}
	qs := map[string]bool{}
	for _, t := range terms(focus) {
		qs[t] = true
	}
	score := map[int]int{}
	for _, i := range cand {
		for _, t := range terms(lines[i]) {
			if qs[t] {
				score[i]++
			}
		}
	}
	// What the step found or decided (failures, errors, the assistant's
	// words) before the acts that carried it out (the edit's call, "has
	// been edited"); among each, those sharing the most of the focus.
	order := slices.Clone(cand)
	sort.SliceStable(order, func(a, b int) bool {
		if x, y := isAct(lines[order[a]]), isAct(lines[order[b]]); x != y {
			return y
		}
		return score[order[a]] > score[order[b]]
	})
	keep := map[int]bool{}
	var kept strings.Builder
	used := 0
	for _, i := range order {
		l := lines[i]
		if len(l) > maxKeyLineBytes {
			l = clip(l, maxKeyLineBytes)
		}
		if isAct(l) && namedAlready(l, kept.String()) {
			// An edit of a file the step's kept lines name already:
			// the block need not say it again (the recall tool has it).
			continue
		}
		n := m.opts.Count(l) + 1
		if used+n > room {
			continue
		}
		keep[i] = true
		kept.WriteString(l)
		kept.WriteString("\n")
		used += n
	}
	if used == 0 {
		// Not one line fits whole: the best, cut to the room.
		i := order[0]
		keep[i] = true
		used = m.opts.Count(clip(lines[i], 3*room)) + 1
	}
	var b strings.Builder
	for _, i := range cand {
		if !keep[i] {
			continue
		}
		l := lines[i]
		if len(l) > maxKeyLineBytes || used > room {
			l = clip(l, min(maxKeyLineBytes, 3*room))
		}
		s.lines[foldSpace(lines[i])] = true
		b.WriteString(l)
		b.WriteString("\n")
	}
	return b.String(), used
}
