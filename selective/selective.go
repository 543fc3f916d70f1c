// Package selective condenses a request surgically: it replaces the
// text of large, old tool outputs with short digests and leaves every
// other byte of the request as it was — every user and assistant message,
// every small or recent tool output, the tools list, unknown fields, key
// order and white space.
//
// It works on the neutral view of a request (package view) and knows no
// field name of any wire format. Messages lists the units of a parsed
// request (each tool output, each other item); the caller (package
// condense) hands them over with the raw body and the request's Codec,
// which says where an item's text is, whether a digest may replace a
// value (plain text only, no cache marker) and how a replacement is
// written. Apply picks the outputs to digest, oldest first, until the
// requested number of tokens is freed, and returns the patches (and the
// patched body). Digests are deterministic (see digest.go), so an output
// digested on one turn is digested identically on the next and the prefix
// of the request stays byte-stable. The originals go to a store the caller
// provides, under the id each digest names.
//
// A Condenser is safe for concurrent use.
package selective

import (
	"cmp"
	"context"
	"fmt"
	"reflect"
	"regexp"
	"strings"
	"time"

	"github.com/cespare/xxhash/v2"
	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	"github.com/condense-proxy/condense-proxy/view"
)

// Codec is what Apply needs of the request's wire format; the route's
// codec (codec/chat, codec/messages, codec/responses) implements it.
// Values are raw JSON as they are in the body.
type Codec interface {
	// TextSpan returns the span, within raw (an item's raw JSON, or a
	// tool output's), of the value holding its own text; ok is false
	// when it has none.
	TextSpan(raw string) (start, end int, ok bool)
	// Editable reports whether a digest may replace value: plain text
	// only, nothing a digest would lose (an image) or move (a cache
	// marker).
	Editable(value string) bool
	// ValueText returns the text of an editable value.
	ValueText(value string) string
	// TextValue renders text as the value written in place of an
	// editable one, or of a tool call's arguments (view.Call.ArgsSpan).
	TextValue(text string) []byte
}

// Message is one unit of the request Apply reads: a tool output (Role
// view.RoleTool), or an item that carries none (with its own text, if
// any). Messages makes them from a parsed request.
type Message struct {
	Role     string // a view role
	Raw      string // the unit's raw JSON, as in the body
	Start    int    // offset of Raw in the body
	Tokens   int
	ToolName string // tool outputs: the name of the call answered
	ToolArgs string // tool outputs: that call's arguments
	// Content is the span, within Raw, of the value a digest replaces, if
	// the caller already knows it ({0, 0}: Apply asks the Codec for the
	// unit's text).
	Content [2]int
	// Item is the index of the request item this message is (or is in:
	// an item may carry several tool outputs).
	Item int
	// Frozen: never edited (the codec froze the item or output).
	Frozen bool
	// ItemHash is the scan's hash of the item's raw JSON (view.Item.Hash;
	// 0: unknown) and Part the message's place among the item's
	// outputs: what digestKeys fingerprints the message by.
	ItemHash uint64
	Part     int
	// Args are the spans, within Raw, of the tool calls' arguments that
	// are JSON strings holding JSON (view.Call.ArgsSpan), which
	// ClearToolInputs may shorten.
	Args [][2]int
}

// Options configures a Condenser. Zero values pick the defaults.
type Options struct {
	// KeepRecentToolOutputs protects the newest tool outputs. Default 5;
	// negative means 0.
	KeepRecentToolOutputs int
	// MinToolOutputTokens is the smallest output digested. Default 500.
	MinToolOutputTokens int
	// ExcludeTools are never digested.
	ExcludeTools []string
	// ClearToolInputs also shortens very large string arguments of old
	// tool calls (a whole file passed to a write tool).
	ClearToolInputs bool
}

// Cache keeps digests between requests.
type Cache interface {
	Get(ctx context.Context, key string) ([]byte, bool)
	Set(ctx context.Context, key string, value []byte, ttl time.Duration)
}

// Condenser digests tool outputs.
type Condenser struct {
	opts  Options
	count func(encoding, text string) int
	cache Cache // may be nil
	keys  *digestKeys
	made  madeDigests
}

// MinTokens is the smallest output digested (Options.MinToolOutputTokens).
func (c *Condenser) MinTokens() int { return c.opts.MinToolOutputTokens }

// Idle reports whether Apply, on the messages of r (Messages(r)), with
// Request.MinTokens minTokens and no Pick, would change nothing whatever
// its ProtectFrom and BriefBefore: no tool output is large enough to be
// digested, and tool inputs are not cleared. A caller then need not list
// the messages.
func (c *Condenser) Idle(r *view.Request, minTokens int) bool {
	if c.opts.ClearToolInputs {
		return false
	}
	least := cmp.Or(minTokens, c.opts.MinToolOutputTokens)
	for i := range r.Items {
		it := &r.Items[i]
		if len(it.Outputs) == 0 || it.Outputs[0].Own {
			continue // no tool output (Messages' own-text unit is not one)
		}
		for _, o := range it.Outputs {
			if o.Tokens >= least {
				return false
			}
		}
	}
	return true
}

// KeepRecent is how many of the newest tool outputs are never digested.
func (c *Condenser) KeepRecent() int { return c.opts.KeepRecentToolOutputs }

// New returns a Condenser; count returns the tokens of a text under a
// tokenizer encoding (Request.Encoding's).
func New(opts Options, count func(encoding, text string) int, cache Cache) *Condenser {
	if opts.KeepRecentToolOutputs == 0 {
		opts.KeepRecentToolOutputs = 5
	}
	if opts.KeepRecentToolOutputs < 0 {
		opts.KeepRecentToolOutputs = 0
	}
	if opts.MinToolOutputTokens <= 0 {
		opts.MinToolOutputTokens = 500
	}
	return &Condenser{opts: opts, count: count, cache: cache, keys: newDigestKeys(),
		made: madeDigests{max: maxMadeBytes, sizeOf: madeSize}}
}

// Messages returns the units of a parsed request: every item, and each
// tool output as a unit of its own (one item may carry several). An item
// whose text is its own output (a user message holding a pasted tool
// result) is one unit with that output's value, of the item's role: it is
// digested only when picked (Request.Pick) and its text starts with a
// pasted result's header naming the tool (pastedTool); a user's own prompt
// never is.
func Messages(r *view.Request) []Message {
	type call struct{ name, args string }
	calls := map[string]call{}
	msgs := make([]Message, 0, len(r.Items))
	for i, it := range r.Items {
		for _, cl := range it.Calls {
			calls[cl.ID] = call{cl.Name, cl.Args}
		}
		if len(it.Outputs) == 0 || it.Outputs[0].Own {
			m := Message{Role: it.Role, Raw: r.Raw(i), Start: it.Start, Tokens: it.Tokens, Item: i, Frozen: it.Frozen, ItemHash: it.Hash}
			for _, cl := range it.Calls {
				if cl.ArgsSpan[1] > 0 && !it.Frozen {
					m.Args = append(m.Args, [2]int{cl.ArgsSpan[0] - it.Start, cl.ArgsSpan[1] - it.Start})
				}
			}
			if len(it.Outputs) > 0 {
				// The item's own text: digestible only when picked.
				o := it.Outputs[0]
				m.Raw, m.Start, m.Content, m.Tokens, m.Frozen = r.Span(o.Start, o.End), o.Start, o.Value, o.Tokens, o.Frozen || it.Frozen
			}
			msgs = append(msgs, m)
			continue
		}
		for k, o := range it.Outputs {
			msgs = append(msgs, Message{Role: view.RoleTool, Raw: r.Span(o.Start, o.End), Start: o.Start, Tokens: o.Tokens,
				ToolName: calls[o.CallID].name, ToolArgs: calls[o.CallID].args, Content: o.Value, Item: i, Frozen: o.Frozen || it.Frozen,
				ItemHash: it.Hash, Part: k})
		}
	}
	return msgs
}

// Request is one Apply call.
type Request struct {
	Body     []byte
	Messages []Message
	// Codec is the wire format's; nil: nothing is digested.
	Codec Codec
	// Encoding is the tokenizer encoding of the request's model, which
	// digests and shortened inputs are counted with (handed to New's
	// count).
	Encoding string
	// Need is the number of tokens to free. MinSavings is the step in which
	// savings grow: the goal is Need rounded up to a multiple of it, so the
	// set of digested outputs changes only every MinSavings tokens of
	// growth, not a little every turn.
	Need, MinSavings int
	// Scope is the caller's scope, part of every cache key.
	Scope string
	// Keep stores the original behind a digest id (may be nil); original
	// renders it, called only when it is stored.
	Keep func(id string, original func() []byte)
	// Summarize, if set, writes the body of a new digest (an LLM); on error
	// the deterministic digest is used. Either result is cached, so an
	// output keeps the same digest from turn to turn.
	Summarize func(ctx context.Context, in Input) (string, error)
	// ProtectFrom, if above 0, also protects every message from this
	// index on (the caller widens the protection to a stride grid).
	ProtectFrom int
	// Pick, if set, names the only messages (indexes into Messages) that
	// may be digested, in that order, whatever their age, until Need is
	// freed (MinSavings does not apply): the newest steps' outputs shrunk
	// when even they do not fit. Only tool outputs are (and tool results
	// an agent pastes into a user message under a header naming the tool,
	// pastedTool): any other text picked is skipped.
	Pick []int
	// CacheOnly: make no new cache entry and call no Summarize; a digest
	// not cached is the deterministic one (for counting without side
	// effects).
	CacheOnly bool
	// MinTokens, when above 0, replaces Options.MinToolOutputTokens for
	// this request (eager digests take smaller outputs: they are read on
	// every request of the conversation).
	MinTokens int
	// BriefBefore, when above 0: the outputs before this index (in
	// Messages) that are not logs get a brief — their digest's marker
	// line alone — instead of a digest (eager digests of old outputs:
	// what a file or a search held is one re-read away, its original
	// kept; a log's failing tests and errors stay).
	BriefBefore int
}

// Result is what Apply did.
type Result struct {
	Body []byte // the patched body; Request.Body when nothing changed
	// Patches are the edits that make Body of Request.Body, in body
	// order.
	Patches  []view.Patch
	Digested int // outputs replaced by digests
	Cleared  int // tool-call arguments shortened
	Saved    int // tokens freed (estimated from the texts)
	// Made lists the digests, in the order they were made.
	Made []Made
}

// Made is one digest Apply made.
type Made struct {
	Item          int // Message.Item of the output digested
	Tool, ID      string
	Before, After int // tokens of the output and of its digest
	Text          string
}

type candidate struct {
	index      int
	start, end int    // the value's span within the message
	raw        string // the value, raw JSON
	tokens     int    // the message's tokens
	tool       string // the tool whose output it is (Message.ToolName, or a pasted result's)
}

// Apply digests outputs, oldest first, until the goal (r.Need rounded up
// to a multiple of r.MinSavings) is freed or the candidates run out.
func (c *Condenser) Apply(ctx context.Context, r Request) (Result, error) {
	res := Result{Body: r.Body}
	if r.Need <= 0 || r.Codec == nil {
		return res, nil
	}
	goal := r.Need
	cands := c.candidates(r.Codec, r.Messages, r.ProtectFrom, cmp.Or(r.MinTokens, c.opts.MinToolOutputTokens))
	if r.Pick != nil {
		cands = c.picked(r)
	} else if r.MinSavings > 0 {
		goal = (r.Need + r.MinSavings - 1) / r.MinSavings * r.MinSavings
	}
	var patches []view.Patch
	for _, cd := range cands {
		if res.Saved >= goal {
			break
		}
		if err := ctx.Err(); err != nil {
			return Result{Body: r.Body}, err
		}
		m := r.Messages[cd.index]
		digest, id, value := c.digest(ctx, r, cd)
		if cd.index < r.BriefBefore {
			digest, value = brief(digest), nil
		}
		saved := cd.tokens - c.count(r.Encoding, digest)
		if saved <= 0 {
			continue // a digest is never larger than its original
		}
		if r.Keep != nil {
			r.Keep(id, func() []byte { return []byte("[" + m.Raw + "]") })
		}
		if value == nil {
			value = r.Codec.TextValue(digest)
		}
		patches = append(patches, view.Patch{Start: m.Start + cd.start, End: m.Start + cd.end, With: value})
		res.Made = append(res.Made, Made{Item: m.Item, Tool: cd.tool, ID: id, Before: cd.tokens, After: cd.tokens - saved, Text: digest})
		res.Saved += saved
		res.Digested++
	}
	if c.opts.ClearToolInputs && res.Saved < goal && r.Pick == nil {
		ps, saved := c.clearInputs(r, goal-res.Saved)
		patches = append(patches, ps...)
		res.Saved += saved
		res.Cleared = len(ps)
	}
	if len(patches) == 0 {
		return res, nil
	}
	res.Body = view.ApplyPatches(r.Body, patches)
	res.Patches = patches
	return res, nil
}

// brief is what a digest's marker line says, shortened — the output's
// tool and key argument, its size and where its original is —, for the
// outputs that are not logs (their kind is in the marker: "— log," keeps
// its digest) nor LLM digests.
func brief(digest string) string {
	marker, _, _ := strings.Cut(digest, "\n")
	m := markerLine.FindStringSubmatch(marker)
	if m == nil || m[2] == KindLog || m[2] == "LLM digest" {
		return digest
	}
	return "[condense-proxy brief of " + m[1] + ": " + m[3] + " lines; GET " + m[4] + "]"
}

// markerLine parses a digest's first line (see digest).
var markerLine = regexp.MustCompile(`^\[condense-proxy digest of (.*) — ([^,]+), original (\d+) lines, \d+ tokens; id \S+: GET (\S+)\]$`)

// candidates lists the digestible outputs, oldest first: tool outputs
// before the protected newest ones, large enough, of a tool not excluded,
// editable.
func (c *Condenser) candidates(codec Codec, msgs []Message, protectFrom, minTokens int) []candidate {
	tools := 0
	protectedFrom := len(msgs)
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == view.RoleTool {
			if tools == c.opts.KeepRecentToolOutputs {
				break
			}
			tools++
			protectedFrom = i
		}
	}
	if c.opts.KeepRecentToolOutputs == 0 {
		protectedFrom = len(msgs)
	}
	if protectFrom > 0 && protectFrom < protectedFrom {
		protectedFrom = protectFrom
	}
	var out []candidate
	for i, m := range msgs[:protectedFrom] {
		if m.Role != view.RoleTool || m.Tokens < minTokens {
			continue
		}
		if cd, ok := c.candidate(codec, i, m); ok {
			out = append(out, cd)
		}
	}
	return out
}

// candidate checks that message i may be digested — not frozen, not of an
// excluded tool, not a digest already, with a value the codec says is
// editable — and returns it as a candidate.
func (c *Condenser) candidate(codec Codec, i int, m Message) (candidate, bool) {
	if m.Frozen || c.excluded(m.ToolName) {
		return candidate{}, false
	}
	start, end := m.Content[0], m.Content[1]
	if end == 0 {
		var found bool
		if start, end, found = codec.TextSpan(m.Raw); !found {
			return candidate{}, false
		}
	}
	if start == 0 {
		return candidate{}, false
	}
	raw := m.Raw[start:end]
	if strings.HasPrefix(raw, `"[condense-proxy digest of `) || strings.HasPrefix(raw, `"[condense-proxy brief of `) {
		return candidate{}, false // a digest already (a JSON string)
	}
	if !codec.Editable(raw) {
		return candidate{}, false
	}
	return candidate{index: i, start: start, end: end, raw: raw, tokens: m.Tokens, tool: m.ToolName}, true
}

// picked lists the candidates among the messages r.Pick names, in the
// caller's order: the newest steps' outputs shrunk so the request fits.
func (c *Condenser) picked(r Request) []candidate {
	var out []candidate
	for _, i := range r.Pick {
		if i < 0 || i >= len(r.Messages) || r.Messages[i].Tokens < minPickTokens {
			continue
		}
		m := r.Messages[i]
		// Tool outputs only: an item's own text (a user's prompt, an
		// assistant's answer) is never digested — but a tool result an
		// agent pastes into a user message, under a header naming the
		// tool, is a tool output.
		if m.Role != view.RoleTool && (m.Role != view.RoleUser || m.Content[1] == 0) {
			continue
		}
		cd, ok := c.candidate(r.Codec, i, m)
		if !ok {
			continue
		}
		if m.Role != view.RoleTool {
			if cd.tool = pastedTool(r.Codec.ValueText(cd.raw)); cd.tool == "" {
				continue
			}
		}
		out = append(out, cd)
	}
	return out
}

// pastedHeader is the header of a tool result pasted into a user message,
// as Cline and Roo Code write it: "[read_file for 'a.go'] Result:".
var pastedHeader = regexp.MustCompile(`^\[([A-Za-z_][\w-]*)(?: for [^\n]*?)?\] Result:`)

// pastedTool returns the tool named by text's pasted-result header ("":
// text does not start with one). Only its first line is read.
func pastedTool(text string) string {
	first, _, _ := strings.Cut(text[:min(len(text), 1024)], "\n")
	if m := pastedHeader.FindStringSubmatch(first); m != nil {
		return m[1]
	}
	return ""
}

// minPickTokens: smaller outputs are not worth a digest even when the
// request does not fit.
const minPickTokens = 200

func (c *Condenser) excluded(tool string) bool {
	for _, t := range c.opts.ExcludeTools {
		if strings.EqualFold(t, tool) {
			return true
		}
	}
	return false
}

// laterWindow is the messages after message i up to and including the
// n-th tool message after it: where error locations into a file read show
// up. n is at most the number of protected recent outputs, so the window
// of any candidate is already complete and its digest never changes.
func laterWindow(msgs []Message, i, n int) []Message {
	if n <= 0 {
		return nil
	}
	tools := 0
	for j, m := range msgs[i+1:] {
		if m.Role == view.RoleTool {
			if tools++; tools == n {
				return msgs[i+1 : i+2+j]
			}
		}
	}
	return msgs[i+1:]
}

// windowText is the text of the tool outputs and assistant items in ms,
// for the digest's "referenced later" lines: each value as JSON text (a
// string decoded, anything else raw).
func windowText(codec Codec, ms []Message) string {
	var b strings.Builder
	for _, m := range ms {
		if m.Role != view.RoleTool && m.Role != view.RoleAssistant {
			continue
		}
		if m.Content[1] > 0 {
			b.WriteString(gjson.Parse(m.Raw[m.Content[0]:m.Content[1]]).String())
		} else if start, end, ok := codec.TextSpan(m.Raw); ok {
			b.WriteString(gjson.Parse(m.Raw[start:end]).String())
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// digest returns the digest text of a candidate (marker line first), its
// id and, when this process remembers it (madeDigests), its value as the
// codec writes it (nil otherwise) — from the cache when it was made
// before.
func (c *Condenser) digest(ctx context.Context, r Request, cd candidate) (string, string, []byte) {
	m := r.Messages[cd.index]
	later := laterWindow(r.Messages, cd.index, min(5, c.opts.KeepRecentToolOutputs))
	sum := c.digestSum(cd, m, later)
	id := fmt.Sprintf("d%016x", sum)
	if r.Summarize != nil {
		text, _ := c.digestText(ctx, r, cd, m, later, id, "dig:llm:"+r.Scope+":"+id)
		return text, id, nil
	}
	mk := madeKey{scope: r.Scope, codec: reflect.TypeOf(r.Codec), sum: sum}
	if d, ok := c.made.get(mk); ok {
		return d.text, id, d.value
	}
	text, cached := c.digestText(ctx, r, cd, m, later, id, "dig:"+r.Scope+":"+id)
	d := madeDigest{text: text, value: r.Codec.TextValue(text)}
	if cached || c.cache == nil {
		// Remembered as the cache holds it: a digest this process just
		// wrote is read back once first, so that of two replicas writing
		// it at once (their texts differ only in its token count, when
		// their requests' models count differently) both keep the one
		// the cache kept.
		c.made.put(mk, d)
	}
	return text, id, d.value
}

// digestText returns the digest text of candidate cd (message m, the
// messages after it later, its id), from the cache under key when it was
// made before (cached), else made (and cached).
func (c *Condenser) digestText(ctx context.Context, r Request, cd candidate, m Message, later []Message, id, key string) (string, bool) {
	if c.cache != nil {
		if v, ok := c.cache.Get(ctx, key); ok {
			return string(v), true
		}
	}
	text := r.Codec.ValueText(cd.raw)
	in := Input{Tool: cd.tool, Args: m.ToolArgs, Content: text, Later: windowText(r.Codec, later), Key: id}
	body, kind := Digest(in)
	keep := c.cache != nil && !r.CacheOnly
	if r.Summarize != nil && !r.CacheOnly {
		s, err := r.Summarize(ctx, in)
		if err == nil && strings.TrimSpace(s) != "" && len(s) < len(text) {
			body, kind = s, "LLM digest"
		} else if err != nil {
			// The deterministic digest stands in for this request only:
			// the LLM is asked again once it is back.
			keep = false
		}
	}
	what := cd.tool
	if k := keyArg(m.ToolArgs); k != "" {
		what += " " + k
	}
	lines := strings.Count(text, "\n") + 1
	out := fmt.Sprintf("[condense-proxy digest of %s — %s, original %d lines, %d tokens; id %s: GET /v1/condense/originals/%s]\n%s",
		what, kind, lines, cd.tokens, id, id, strings.TrimRight(body, "\n"))
	if keep {
		c.cache.Set(context.WithoutCancel(ctx), key, []byte(out), 24*time.Hour)
	}
	return out, false
}

// digestSum is what the key of candidate cd's digest (message m, the
// messages after it later) is made of: a hash of raw bytes — nothing is
// decoded unless the digest has to be made —, found in c.keys when this
// process hashed the same bytes before.
func (c *Condenser) digestSum(cd candidate, m Message, later []Message) uint64 {
	fp, ok := c.keys.fingerprint(cd.tool, m.ToolArgs, m, later)
	if ok {
		if sum, ok := c.keys.sums.get(fp); ok {
			return sum
		}
	}
	h := xxhash.New()
	for _, s := range []string{cd.tool, m.ToolArgs, cd.raw} {
		h.WriteString(s)
		h.Write([]byte{0})
	}
	for _, l := range later {
		h.WriteString(l.Raw)
		h.Write([]byte{0})
	}
	sum := h.Sum64()
	if ok {
		c.keys.sums.put(fp, sum)
	}
	return sum
}

// clearInputs shortens large string arguments of old tool calls: every
// string value over 400 bytes becomes a marker; the arguments stay valid
// JSON.
func (c *Condenser) clearInputs(r Request, goal int) ([]view.Patch, int) {
	var patches []view.Patch
	saved := 0
	last := lastAssistant(r.Messages)
	for i, m := range r.Messages {
		if saved >= goal || i >= last || (r.ProtectFrom > 0 && i >= r.ProtectFrom) {
			break
		}
		if m.Role != view.RoleAssistant || m.Frozen {
			continue
		}
		for _, sp := range m.Args {
			argsRaw := m.Raw[sp[0]:sp[1]]
			args := gjson.Parse(argsRaw).String()
			if len(args) < 4*c.opts.MinToolOutputTokens || !gjson.Valid(args) {
				continue
			}
			short := args
			changed := false
			gjson.Parse(args).ForEach(func(k, v gjson.Result) bool {
				if v.Type == gjson.String && len(v.Str) > 400 {
					id := fmt.Sprintf("a%016x", xxhash.Sum64String(v.Str))
					marker := fmt.Sprintf("[condensed by condense-proxy: %d characters; id %s]", len(v.Str), id)
					if s, err := sjson.Set(short, escapeKey(k.Str), marker); err == nil {
						short = s
						changed = true
						if r.Keep != nil {
							str := v.Str
							r.Keep(id, func() []byte { return quote(str) })
						}
					}
				}
				return true
			})
			if !changed {
				continue
			}
			start := m.Start + sp[0]
			patches = append(patches, view.Patch{Start: start, End: start + len(argsRaw), With: r.Codec.TextValue(short)})
			saved += c.count(r.Encoding, args) - c.count(r.Encoding, short)
		}
	}
	return patches, saved
}

func lastAssistant(msgs []Message) int {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == view.RoleAssistant {
			return i
		}
	}
	return 0
}

func escapeKey(k string) string {
	r := strings.NewReplacer(".", `\.`, "*", `\*`, "?", `\?`, "|", `\|`, "#", `\#`, "@", `\@`)
	return r.Replace(k)
}
