package proxy

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/condense-proxy/condense-proxy/memory"
	"github.com/condense-proxy/condense-proxy/view"
)

// The recall tool. From a conversation's first condensation on, every
// request of it carries condense_recall (memory.recall_tool), always the
// same bytes. When the model calls it, the proxy answers: it looks the
// call up in the caller's own conversation memory, appends the model's
// turn and the result to the request, and asks the upstream again (at
// most MaxRecallRounds times); the agent receives only the final answer,
// in its own format, streamed or not.
//
//   - Streams are not held up: the events of an answer before its first
//     tool call go to the agent as they come; from its first call on they
//     are held until the answer ends (a call is not actionable before
//     then), and sent then — unless the answer called condense_recall, in
//     which case they are dropped and the next round's events continue
//     the agent's message (numbered after what it received). While a
//     round is asked, the stream carries the format's keep-alive (an SSE
//     comment, a Messages ping) at once and every RecallKeepAlive.
//   - A model that calls condense_recall together with the agent's own
//     tools: only the recall calls are answered and appended (with the
//     turn's text and reasoning); the agent's calls are left out of that
//     turn, so the upstream never sees a half-answered turn, and the
//     agent gets the calls the model makes in its final answer.
//   - Past MaxRecallRounds the calls are answered with a result saying the
//     limit is reached and the upstream is asked once more; recall calls
//     that answer still makes are dropped from what the agent receives.
//   - One answer's first MaxRecallCalls recall calls are answered; the
//     others leave the turn appended, and the last result says so.
//   - A round's request must fit: the recalled text shares what the
//     model's threshold (the report's Trigger, counted as the engine
//     counts) leaves after the request and the model's turn; when it
//     does not fit, the calls get a short result saying so instead,
//     within the model's window; when not even that fits, no round is
//     asked and the agent gets the answer without the recall calls.
//   - Every answer the codec can read is read, whatever its Content-Type
//     says (or not): a JSON object, or server-sent events. What it cannot
//     read goes to the agent as it came. The agent never receives a
//     condense_recall call: calls left unanswered are dropped from the
//     answer (every choice of it), and its final state (finish_reason,
//     stop_reason, the response's output) says what is left.
//   - Bad input (unknown ids, another caller's ids, huge queries) gets a
//     tool result saying so (package memory), never an error.
//   - The tool is added to requests that are condensed, and to the other
//     requests of a conversation condensed before (under the threshold);
//     never to one the report says goes as received because it could
//     not be condensed (Report.AsReceived), nor to one
//     the codec refuses it (tool_choice none; chat: n > 1, the legacy
//     functions; Responses: state the upstream keeps).

// Recaller answers condense_recall calls from conversations' memories
// (package memory's Memory is one).
type Recaller interface {
	// Recall answers one call's arguments within budget tokens.
	// creds are the caller's own (for embeddings); never kept.
	Recall(ctx context.Context, scope, conversation, args string, budget int, creds http.Header) memory.Recalled
}

// RecallKeepAlive is how often a stream waiting on a recall round gets a
// keep-alive event.
var RecallKeepAlive = 5 * time.Second

// maxAnswerBytes bounds an answer read to find recall calls.
const maxAnswerBytes = 64 << 20

// Bounds of a recall round.
const (
	// defaultMaxRecallCalls is Options.MaxRecallCalls' default.
	defaultMaxRecallCalls = 4
	// minRecallTokens: a recall is not asked with less room than this;
	// the call gets a result saying there is no room instead.
	minRecallTokens = 100
	// recallSlack is kept free of a round's room: the counts of parts do
	// not add up exactly to the count of the whole.
	recallSlack = 32
)

// Counter counts a request's tokens as the Condenser does (the Engine
// does): a Condenser that implements it has the recall rounds' requests
// measured against the report's Trigger and Window with it; otherwise a
// byte estimate (4 bytes a token) is used.
type Counter interface {
	Count(codec view.Codec, body []byte) (int, error)
}

// recallTool is the tool added to requests.
var recallTool = memory.Tool

// recallState is a request that carries the recall tool.
type recallState struct {
	codec view.Codec
	tools view.Tools
	scope string
	conv  string
	body  []byte      // the body forwarded
	creds http.Header // the caller's credentials, for the memory's calls
	// trigger and window are the model's (the report's): a round's
	// request carries recalled text only within trigger tokens, and
	// goes at all only within window.
	trigger, window int
}

// addRecallTool adds condense_recall to a request of a condensed
// conversation, when the recall tool is on and the codec can. It
// returns the body to forward. A counting request (count_tokens) gets the
// tool too, so it counts what the agent's next request will carry, but
// its answer is not read.
func (p *Proxy) addRecallTool(r *http.Request, codec view.Codec, body []byte, countOnly bool) []byte {
	ri := info(r.Context())
	rep := ri.report
	if !p.opts.RecallTool || p.opts.Recall == nil || rep == nil || !rep.Counted || rep.Conversation == "" || rep.AgentCompaction != "" {
		return body
	}
	if rep.AsReceived {
		// Reported as going unchanged (it could not be condensed): it
		// does.
		return body
	}
	tools, ok := codec.(view.Tools)
	if !ok {
		return body
	}
	if !rep.RecallTool {
		// The engine says: not condensed yet (nor any request of the
		// conversation before it).
		return body
	}
	out, ok, err := tools.AddTool(body, recallTool)
	if err != nil || !ok {
		if err != nil {
			ri.note = "recall tool not added: " + err.Error()
		}
		return body
	}
	if countOnly {
		return out
	}
	// Answers are read here: ask them unencoded (the transport's own
	// gzip is undone before the proxy reads).
	r.Header.Del("Accept-Encoding")
	ri.recall = &recallState{codec: codec, tools: tools, scope: ri.scope, conv: rep.Conversation, body: out,
		creds: p.opts.Scoper.Credentials(r.Header), trigger: rep.Trigger, window: rep.Window}
	return out
}

// isRecall reports whether c calls condense_recall.
func isRecall(c view.ToolCall) bool { return c.Name == memory.ToolName }

func hasRecall(a view.Answer) bool {
	for _, c := range a.Calls {
		if isRecall(c) {
			return true
		}
	}
	return false
}

// answerRecalls, in ModifyResponse, answers the model's recall calls of a
// request that carries the tool: a JSON answer here, a stream as the
// agent reads it. Which one it is, the body says (its first bytes), not
// the Content-Type.
func (p *Proxy) answerRecalls(res *http.Response) error {
	ri := info(res.Request.Context())
	st := ri.recall
	if st == nil || res.StatusCode != http.StatusOK {
		return nil
	}
	if enc := res.Header.Get("Content-Encoding"); enc != "" && enc != "identity" {
		ri.note = "answer in Content-Encoding " + clipName(enc, 40) + " (not asked for); recall calls not looked for"
		return nil
	}
	rd := bufio.NewReaderSize(res.Body, 64<<10)
	kind := sniffAnswer(rd)
	src := readCloser{rd, res.Body}
	switch kind {
	case answerStream:
		res.Body = &recallStream{p: p, ctx: res.Request.Context(), ri: ri, st: st, tmpl: res.Request, as: st.tools.Stream(memory.ToolName),
			src: src, rd: rd, reqBody: st.body}
		res.ContentLength = -1
		res.Header.Del("Content-Length")
		return nil
	case answerJSON:
		res.Body = src
		return p.recallJSON(res, ri, st)
	}
	// Not an answer of the format: the agent cannot read a call in it
	// either.
	res.Body = src
	return nil
}

// readCloser reads through a buffered reader and closes what it buffers.
type readCloser struct {
	io.Reader
	io.Closer
}

// Kinds of answers, by their first bytes.
const (
	answerOther = iota
	answerJSON
	answerStream
)

// sniffAnswer tells a JSON answer (an object) from a stream of
// server-sent events by the first bytes of the body, without consuming
// them; it reads no more than it needs (a stream's first event may be
// all there is for a while).
func sniffAnswer(rd *bufio.Reader) int {
	i := 0
	if b, err := rd.Peek(3); err == nil && string(b) == "\uFEFF" {
		i = 3
	}
	for ; i < rd.Size(); i++ {
		b, err := rd.Peek(i + 1)
		if err != nil || len(b) <= i {
			return answerOther
		}
		switch b[i] {
		case ' ', '\t', '\r', '\n':
			continue
		case '{':
			return answerJSON
		case ':':
			return answerStream // an SSE comment
		}
		for _, field := range []string{"data:", "event:", "id:", "retry:"} {
			if b[i] != field[0] {
				continue
			}
			if b, err := rd.Peek(i + len(field)); err == nil && string(b[i:]) == field {
				return answerStream
			}
		}
		return answerOther
	}
	return answerOther
}

// recallJSON answers the recall calls of a JSON answer, round after
// round, and puts the final answer in res, without a recall call.
func (p *Proxy) recallJSON(res *http.Response, ri *reqInfo, st *recallState) error {
	ctx := res.Request.Context()
	body, err := readAnswer(res.Body)
	if err != nil {
		return err
	}
	reqBody := st.body
	for round := 0; ; round++ {
		a, err := st.tools.ReadAnswer(body)
		if err != nil || !hasRecall(a) {
			break
		}
		if round > p.opts.MaxRecallRounds {
			ri.note = "recall calls past the round limit dropped from the answer"
			break
		}
		next, ok := p.nextRound(ctx, ri, st, reqBody, a, round)
		if !ok {
			break
		}
		reqBody = next
		up, err := p.askAgain(ctx, res.Request, reqBody)
		if err != nil {
			return err
		}
		p.meterAnswer(ri, up)
		body, err = readAnswer(up.Body)
		if err != nil {
			return err
		}
		res.StatusCode, res.Status, res.Header = up.StatusCode, up.Status, up.Header.Clone()
		if up.StatusCode != http.StatusOK {
			break // the upstream's own answer, as it gave it
		}
	}
	if res.StatusCode == http.StatusOK && bytes.Contains(body, []byte(memory.ToolName)) {
		// What is left unanswered (past a limit, in another choice)
		// never reaches the agent.
		if out, err := st.tools.DropCalls(body, isRecall); err == nil {
			body = out
		}
	}
	res.Body = io.NopCloser(bytes.NewReader(body))
	res.ContentLength = int64(len(body))
	res.Header.Set("Content-Length", strconv.Itoa(len(body)))
	res.Header.Del("Content-Encoding")
	return nil
}

// readAnswer reads (and closes) an answer's body, within maxAnswerBytes.
func readAnswer(rc io.ReadCloser) ([]byte, error) {
	defer rc.Close()
	b, err := io.ReadAll(io.LimitReader(rc, maxAnswerBytes+1))
	if err != nil {
		return nil, fmt.Errorf("reading the upstream's answer: %w", err)
	}
	if len(b) > maxAnswerBytes {
		return nil, fmt.Errorf("upstream answer over %d bytes", maxAnswerBytes)
	}
	return b, nil
}

// count is body's tokens as the engine counts them (Counter), or, when
// the Condenser cannot count, an estimate of 4 bytes a token.
func (p *Proxy) count(st *recallState, body []byte) int {
	if c, ok := p.opts.Condenser.(Counter); ok {
		n, err := c.Count(st.codec, body)
		if err != nil {
			return math.MaxInt // not countable: fits nothing
		}
		return n
	}
	return (len(body) + 3) / 4
}

// nextRound returns the request of the next recall round: reqBody with
// the model's turn a appended (its first MaxRecallCalls recall calls)
// and their results — recalled within what the model's threshold leaves,
// or, when that does not fit, a short result saying so, within its
// window. ok is false when no round is to be asked (the note says why).
func (p *Proxy) nextRound(ctx context.Context, ri *reqInfo, st *recallState, reqBody []byte, a view.Answer, round int) ([]byte, bool) {
	var answered []int // the indexes in a.Calls of the calls answered
	extra := 0
	for i, c := range a.Calls {
		if !isRecall(c) {
			continue
		}
		if len(answered) == p.opts.MaxRecallCalls {
			extra++
			continue
		}
		answered = append(answered, i)
	}
	keep := func(i int, _ view.ToolCall) bool { return slices.Contains(answered, i) }
	build := func(recs []memory.Recalled) ([]byte, int, error) {
		results := make([]view.ToolResult, len(answered))
		for k, i := range answered {
			text := recs[k].Answer
			if k == len(answered)-1 && extra > 0 {
				text += fmt.Sprintf("\n[%d more %s call(s) of this turn were not answered and are left out: at most %d are answered per turn; "+
					"call again for what is still missing.]", extra, memory.ToolName, p.opts.MaxRecallCalls)
			}
			results[k] = view.ToolResult{CallID: a.Calls[i].ID, Text: text}
		}
		next, err := st.tools.AppendTurn(reqBody, a, keep, results)
		if err != nil {
			return nil, 0, err
		}
		return next, p.count(st, next), nil
	}
	short := func(outcome, text string) []memory.Recalled {
		recs := make([]memory.Recalled, len(answered))
		for k := range recs {
			recs[k] = memory.Recalled{Outcome: outcome, Answer: text}
		}
		return recs
	}
	noRoom := short(outcomeNoRoom, fmt.Sprintf("%s: what it would recall would not fit the model's context window beside this conversation; "+
		"answer with what you have (or ask for less: one id, or a narrower query).", memory.ToolName))

	// The room the results share: the threshold less the request with
	// the turn and empty results.
	_, base, err := build(make([]memory.Recalled, len(answered)))
	if err != nil {
		ri.note = "recall round not asked: " + err.Error()
		return nil, false
	}
	var recs []memory.Recalled
	recalled := false // recs hold recalled text (not a short result)
	switch per := (st.trigger - base - recallSlack) / len(answered); {
	case round >= p.opts.MaxRecallRounds:
		recs = short("limit", fmt.Sprintf("%s: the limit of %d recall rounds for one answer is reached; "+
			"answer with what you have, without calling %s again.", memory.ToolName, p.opts.MaxRecallRounds, memory.ToolName))
	case per < minRecallTokens:
		recs = noRoom
	default:
		budget := min(p.opts.RecallBudgetTokens, per)
		for _, i := range answered {
			recs = append(recs, p.opts.Recall.Recall(ctx, st.scope, st.conv, a.Calls[i].Args, budget, st.creds))
		}
		recalled = true
	}
	next, n, err := build(recs)
	if err == nil && n > st.trigger && recalled {
		// (the counts of the parts fell short of the whole's)
		recs = noRoom
		next, n, err = build(recs)
	}
	switch {
	case err != nil:
		ri.note = "recall round not asked: " + err.Error()
		return nil, false
	case n > st.window:
		ri.note = fmt.Sprintf("recall round not asked: its request would be %d tokens, over the window (%d); recall calls dropped from the answer", n, st.window)
		return nil, false
	}
	for _, rec := range recs {
		ri.recalls = append(ri.recalls, rec)
		p.metrics.recalls.WithLabelValues(rec.Outcome).Inc()
		p.metrics.recalledItems.Add(float64(len(rec.Items)))
	}
	if extra > 0 {
		ri.note = fmt.Sprintf("%d recall call(s) past max %d per answer left unanswered", extra, p.opts.MaxRecallCalls)
	}
	return next, true
}

// outcomeNoRoom is the outcome of a recall whose answer would not fit the
// round's request.
const outcomeNoRoom = "no_room"

// askAgain sends body upstream as tmpl was sent (its URL and headers).
func (p *Proxy) askAgain(ctx context.Context, tmpl *http.Request, body []byte) (*http.Response, error) {
	out := tmpl.Clone(ctx)
	setBody(out, io.NopCloser(bytes.NewReader(body)), body)
	res, err := p.opts.Transport.RoundTrip(out)
	if err != nil {
		return nil, fmt.Errorf("asking the upstream again after a recall: %w", err)
	}
	return res, nil
}

// maxEventBytes bounds one server-sent event of an answer.
const maxEventBytes = 32 << 20

// readEvent reads one event: its lines up to the blank line that ends it
// (not included). At the end of the stream it returns what is left and
// io.EOF.
func readEvent(rd *bufio.Reader) ([]byte, error) {
	var ev []byte
	partial := false // the previous piece was a line's start, not a line
	for {
		line, err := rd.ReadSlice('\n')
		full := errors.Is(err, bufio.ErrBufferFull)
		blank := !partial && len(bytes.TrimRight(line, "\r\n")) == 0
		partial = full
		if full {
			err = nil
		}
		if blank && err == nil {
			if len(ev) == 0 {
				continue // blank lines between events
			}
			return bytes.TrimRight(ev, "\r\n"), nil
		}
		ev = append(ev, line...)
		if len(ev) > maxEventBytes {
			return nil, fmt.Errorf("an event of the upstream's answer is over %d bytes", maxEventBytes)
		}
		if err != nil {
			return bytes.TrimRight(ev, "\r\n"), err
		}
	}
}

// recallStream is a streamed answer as the agent reads it, with the
// recall rounds answered in it (see the comment at the top of this
// file). Read on the request's goroutine, like any answer body.
type recallStream struct {
	p    *Proxy
	ctx  context.Context
	ri   *reqInfo
	st   *recallState
	tmpl *http.Request
	as   view.AnswerStream

	src     io.ReadCloser
	rd      *bufio.Reader
	reqBody []byte
	round   int

	out     bytes.Buffer
	holding bool
	held    []view.Held
	pending chan roundResult
	tick    *time.Ticker
	err     error // io.EOF when the answer is complete
}

type roundResult struct {
	res *http.Response
	err error
}

func (s *recallStream) Read(b []byte) (int, error) {
	for s.out.Len() == 0 && s.err == nil {
		s.step()
	}
	if s.out.Len() > 0 {
		return s.out.Read(b)
	}
	return 0, s.err
}

// step reads one event, or waits for a round's answer (a keep-alive at
// each tick).
func (s *recallStream) step() {
	if s.pending != nil {
		select {
		case rr := <-s.pending:
			s.pending = nil
			s.tick.Stop()
			if rr.err != nil {
				s.err = rr.err
				return
			}
			s.p.meterAnswer(s.ri, rr.res)
			rd := bufio.NewReaderSize(rr.res.Body, 64<<10)
			if rr.res.StatusCode != http.StatusOK || sniffAnswer(rd) != answerStream {
				rr.res.Body.Close()
				// The agent's stream has begun: it is cut, never ended as
				// if complete.
				s.err = fmt.Errorf("upstream answered %d (%s) to a recall round, not a stream", rr.res.StatusCode, clipName(rr.res.Header.Get("Content-Type"), 60))
				return
			}
			s.src, s.rd = readCloser{rd, rr.res.Body}, rd
		case <-s.tick.C:
			s.out.Write(s.as.KeepAlive())
		case <-s.ctx.Done():
			s.err = s.ctx.Err()
		}
		return
	}
	ev, err := readEvent(s.rd)
	if len(ev) > 0 {
		s.event(ev)
	}
	switch {
	case err == io.EOF:
		s.endOfAnswer()
	case err != nil:
		s.err = err
	}
}

func (s *recallStream) event(ev []byte) {
	kind, out, call := s.as.Event(ev)
	switch {
	case kind == view.EventDrop:
		return
	case kind == view.EventCall:
		s.holding = true
	}
	if s.holding {
		s.held = append(s.held, view.Held{Event: out, Call: call})
		return
	}
	s.out.Write(out)
}

// endOfAnswer decides, at the end of one upstream answer, whether the
// agent gets it (the held events sent, without recall calls) or a recall
// round starts.
func (s *recallStream) endOfAnswer() {
	s.src.Close()
	a := s.as.Answer()
	release := func(drop func(int, view.ToolCall) bool) {
		s.out.Write(s.as.Release(s.held, drop))
		s.held = nil
		s.err = io.EOF
	}
	dropRecalls := func(_ int, c view.ToolCall) bool { return isRecall(c) }
	if !hasRecall(a) {
		release(func(int, view.ToolCall) bool { return false })
		return
	}
	if s.round > s.p.opts.MaxRecallRounds {
		s.ri.note = "recall calls past the round limit dropped from the answer"
		release(dropRecalls)
		return
	}
	body, ok := s.p.nextRound(s.ctx, s.ri, s.st, s.reqBody, a, s.round)
	if !ok {
		release(dropRecalls)
		return
	}
	s.reqBody = body
	s.round++
	s.held, s.holding = nil, false
	s.as.Next()
	s.out.Write(s.as.KeepAlive())
	s.tick = time.NewTicker(RecallKeepAlive)
	ch := make(chan roundResult, 1)
	s.pending = ch
	p, ctx, tmpl := s.p, s.ctx, s.tmpl
	go func() {
		res, err := p.askAgain(ctx, tmpl, body)
		ch <- roundResult{res, err}
	}()
}

func (s *recallStream) Close() error {
	if s.pending != nil {
		s.tick.Stop()
		ch := s.pending
		s.pending = nil
		go func() {
			if rr := <-ch; rr.res != nil {
				rr.res.Body.Close()
			}
		}()
	}
	return s.src.Close()
}
