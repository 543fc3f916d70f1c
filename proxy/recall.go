package proxy

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"time"

	"github.com/condense-proxy/condense-proxy/condense"
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
//   - Bad input (unknown ids, another caller's ids, huge queries) gets a
//     tool result saying so (package memory), never an error.

// Recaller answers condense_recall calls from conversations' memories
// (package memory's Memory is one).
type Recaller interface {
	// Recall answers one call's arguments within budget tokens.
	// creds are the caller's own (for embeddings); never kept.
	Recall(ctx context.Context, scope, conversation, args string, budget int, creds http.Header) memory.Recalled
	// Condensed reports whether the conversation was condensed once.
	Condensed(ctx context.Context, scope, conversation string) bool
}

// RecallKeepAlive is how often a stream waiting on a recall round gets a
// keep-alive event.
var RecallKeepAlive = 5 * time.Second

// maxAnswerBytes bounds an answer read to find recall calls.
const maxAnswerBytes = 64 << 20

// recallTool is the tool added to requests.
var recallTool = view.Tool{Name: memory.ToolName, Description: memory.ToolDescription, Schema: memory.ToolSchema}

// recallState is a request that carries the recall tool.
type recallState struct {
	tools view.Tools
	scope string
	conv  string
	body  []byte      // the body forwarded
	creds http.Header // the caller's credentials, for the memory's calls
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
	tools, ok := codec.(view.Tools)
	if !ok {
		return body
	}
	condensed := rep.Applied != condense.AppliedNone && rep.Applied != condense.AppliedObserve && rep.Applied != ""
	if !condensed && !p.opts.Recall.Condensed(r.Context(), ri.scope, rep.Conversation) {
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
	ri.recall = &recallState{tools: tools, scope: ri.scope, conv: rep.Conversation, body: out, creds: p.opts.Scoper.Credentials(r.Header)}
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
// agent reads it.
func (p *Proxy) answerRecalls(res *http.Response) error {
	ri := info(res.Request.Context())
	st := ri.recall
	if st == nil || res.StatusCode != http.StatusOK {
		return nil
	}
	if enc := res.Header.Get("Content-Encoding"); enc != "" && enc != "identity" {
		return nil
	}
	ct, _, _ := mime.ParseMediaType(res.Header.Get("Content-Type"))
	switch ct {
	case "text/event-stream":
		res.Body = &recallStream{p: p, ctx: res.Request.Context(), ri: ri, st: st, tmpl: res.Request, as: st.tools.Stream(memory.ToolName),
			src: res.Body, rd: bufio.NewReaderSize(res.Body, 64<<10), reqBody: st.body}
		res.ContentLength = -1
		res.Header.Del("Content-Length")
		return nil
	case "application/json":
		return p.recallJSON(res, ri, st)
	}
	return nil
}

// recallJSON answers the recall calls of a JSON answer, round after
// round, and puts the final answer in res.
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
			if out, err := st.tools.DropCalls(body, isRecall); err == nil {
				body = out
			}
			ri.note = "recall calls past the round limit dropped from the answer"
			break
		}
		next, err := st.tools.AppendTurn(reqBody, a, isRecall, p.answerCalls(ctx, ri, st, a, round))
		if err != nil {
			if out, err := st.tools.DropCalls(body, isRecall); err == nil {
				body = out
			}
			break
		}
		reqBody = next
		up, err := p.askAgain(ctx, res.Request, reqBody)
		if err != nil {
			return err
		}
		body, err = readAnswer(up.Body)
		if err != nil {
			return err
		}
		res.StatusCode, res.Status, res.Header = up.StatusCode, up.Status, up.Header.Clone()
		if up.StatusCode != http.StatusOK {
			break // the upstream's own answer, as it gave it
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

// answerCalls answers the recall calls of a: from the memory, or, past
// the round limit, with a result saying so.
func (p *Proxy) answerCalls(ctx context.Context, ri *reqInfo, st *recallState, a view.Answer, round int) []view.ToolResult {
	var out []view.ToolResult
	for _, c := range a.Calls {
		if !isRecall(c) {
			continue
		}
		var rec memory.Recalled
		if round >= p.opts.MaxRecallRounds {
			rec = memory.Recalled{Outcome: "limit", Answer: fmt.Sprintf("%s: the limit of %d recall rounds for one answer is reached; "+
				"answer with what you have, without calling %s again.", memory.ToolName, p.opts.MaxRecallRounds, memory.ToolName)}
		} else {
			rec = p.opts.Recall.Recall(ctx, st.scope, st.conv, c.Args, p.opts.RecallBudgetTokens, st.creds)
		}
		ri.recalls = append(ri.recalls, rec)
		p.metrics.recalls.WithLabelValues(rec.Outcome).Inc()
		p.metrics.recalledItems.Add(float64(len(rec.Items)))
		out = append(out, view.ToolResult{CallID: c.ID, Text: rec.Answer})
	}
	return out
}

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
	held    []heldEvent
	pending chan roundResult
	tick    *time.Ticker
	err     error // io.EOF when the answer is complete
}

type heldEvent struct {
	b    []byte
	call int
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
			ct, _, _ := mime.ParseMediaType(rr.res.Header.Get("Content-Type"))
			if rr.res.StatusCode != http.StatusOK || ct != "text/event-stream" {
				rr.res.Body.Close()
				// The agent's stream has begun: it is cut, never ended as
				// if complete.
				s.err = fmt.Errorf("upstream answered %d (%s) to a recall round", rr.res.StatusCode, ct)
				return
			}
			s.src, s.rd = rr.res.Body, bufio.NewReaderSize(rr.res.Body, 64<<10)
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
		s.held = append(s.held, heldEvent{out, call})
		return
	}
	s.out.Write(out)
}

// endOfAnswer decides, at the end of one upstream answer, whether the
// agent gets it (the held events sent) or a recall round starts.
func (s *recallStream) endOfAnswer() {
	s.src.Close()
	a := s.as.Answer()
	flush := func(dropRecalls bool) {
		for _, h := range s.held {
			if dropRecalls && h.call >= 0 && h.call < len(a.Calls) && isRecall(a.Calls[h.call]) {
				continue
			}
			s.out.Write(h.b)
		}
		s.held = nil
		s.err = io.EOF
	}
	if !hasRecall(a) {
		flush(false)
		return
	}
	if s.round > s.p.opts.MaxRecallRounds {
		s.ri.note = "recall calls past the round limit dropped from the answer"
		flush(true)
		return
	}
	body, err := s.st.tools.AppendTurn(s.reqBody, a, isRecall, s.p.answerCalls(s.ctx, s.ri, s.st, a, s.round))
	if err != nil {
		s.ri.note = "recall round not asked: " + err.Error()
		flush(true)
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
