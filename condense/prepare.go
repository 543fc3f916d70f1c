package condense

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/condense-proxy/condense-proxy/redact"
)

// prepare summarizes, in the background, the chunks a coming condensation
// will need, so the request that crosses the threshold finds them cached.
// At most PrepareConcurrency run at once; others are skipped, not queued.
//
// base, if not nil, is where the summaries may be asked in place: the
// request as it is forwarded (inplace.go).
func (e *Engine) prepare(rq *job, base *inPlace) {
	if e.cache == nil || rq.req.CountOnly || e.bgCtx.Err() != nil {
		// No cache to prepare into, or the engine's background work was
		// cancelled (Close past its deadline): nothing is started.
		return
	}
	// A request that has parsed its conversation tells at once whether
	// the work is already done: the same chunks, up to the same last one,
	// prepared before (the steady state of a long session, where every
	// request is near its next fold).
	if rq.conv != nil {
		// (The fold break as this job knows it: no cache read on the
		// request's path. Under the threshold there is none yet.)
		mark := e.prepareMark(rq, e.prepareChunks(rq, rq.decisions[decisionFoldBreak]))
		if mark == "" || e.prepared.has(mark) {
			return
		}
	}
	select {
	case e.prepareSem <- struct{}{}:
	default:
		return
	}
	bg := backgroundJob(rq, base)
	// Detached from the request: the agent does not wait for this, and it
	// must finish even if this request's client leaves.
	e.bg.Add(1)
	go func() {
		defer e.bg.Done()
		defer func() { <-e.prepareSem }()
		e.prepareAhead(e.bgCtx, bg)
	}()
}

// backgroundJob returns a job of its own for work on rq that outlives the
// request, whose body buffer may be reused: it runs on its own copy (item
// offsets stay the same), and no request deadline stops it. Only the copy
// is made here: parsing it, and the checks that need the parse, are the
// background's.
func backgroundJob(rq *job, base *inPlace) *job {
	in := *detached(rq.in)
	in.Parsed = false
	req := rq.req
	req.Slot = nil // the request's place is its own, not the background's
	if base != nil {
		base = base.clone(rq.in, &in)
	}
	var decisions map[string]int
	if v, ok := rq.decisions[decisionFoldBreak]; ok {
		decisions = map[string]int{decisionFoldBreak: v}
	}
	return &job{reqState: &reqState{req: req, codec: rq.codec, model: rq.model, limits: rq.limits, over: rq.over, headHash: rq.headHash, decisions: decisions},
		in: &in, inplace: base}
}

// prepareAhead summarizes the chunks of rq, a background job, that a
// coming condensation will need, unless that was done, or is being done
// for the same conversation here or (the shared lock held, renewed while
// the work runs) on another replica.
func (e *Engine) prepareAhead(ctx context.Context, rq *job) {
	if err := e.parse(rq); err != nil || len(rq.conv.steps) == 0 {
		return
	}
	key := rq.req.Scope + ":" + rq.head()
	if _, busy := e.preparing.LoadOrStore(key, struct{}{}); busy {
		return
	}
	defer e.preparing.Delete(key)
	if l, ok := e.cache.(Locker); ok {
		release, got := l.Lock(ctx, "prepare:"+key, e.opts.SummaryTimeout+5*time.Second)
		if !got {
			return
		}
		defer release()
	}
	brk, _ := e.decided(ctx, rq, decisionFoldBreak)
	folded := e.prepareChunks(rq, brk)
	mark := e.prepareMark(rq, folded)
	if mark == "" || e.prepared.has(mark) {
		return
	}
	items, err := e.summarizeChunks(ctx, rq, e.foldSize(), folded)
	if err == nil {
		_, err = e.foldLevels(ctx, rq, e.foldSize(), items, e.budgets(rq).summary)
	}
	if err != nil {
		e.log.Warn("background summary preparation failed", "err", redact.Secrets(err.Error(), credentialValues(rq.req.Credentials)...))
		return
	}
	if len(rq.degraded) == 0 { // an extractive stand-in is not kept: try again later
		e.prepared.add(mark)
	}
	e.log.Debug("summaries prepared ahead", "chunks", len(folded), "summarizer_calls", rq.calls)
}

// prepareChunks returns the chunks prepare summarizes: every chunk outside
// the recent turns, since the request that crosses the threshold will be
// longer than this one and fold at least as much. foldBreak is the
// conversation's decisionFoldBreak as stored (0: not known).
func (e *Engine) prepareChunks(rq *job, foldBreak int) []chunk {
	b := e.budgets(rq)
	var folded []chunk
	for _, ch := range chunkSteps(rq.conv.steps, b.chunk, max(foldBreak-1, 0)) {
		if ch.b > len(rq.conv.steps)-b.keepRecent {
			break
		}
		folded = append(folded, ch)
	}
	return folded
}

// prepareMark names what preparing folded achieves: the caller, the
// conversation's head, how many chunks and the content of the last one
// (chunks are cut from the start, so the same last chunk at the same
// place means the same chunks before it). "" when there is nothing to
// prepare.
func (e *Engine) prepareMark(rq *job, folded []chunk) string {
	if len(folded) == 0 {
		return ""
	}
	last := folded[len(folded)-1]
	c := rq.conv
	return fmt.Sprintf("%s:%s:%d:%s", rq.req.Scope, rq.head(), len(folded),
		c.hashMessages(c.steps[last.a].first, c.steps[last.b-1].end))
}

// markSet is a bounded set of prepare marks: when full it starts over,
// which only costs a background pass that finds its summaries cached.
type markSet struct {
	mu sync.Mutex
	m  map[string]struct{}
}

const maxPrepareMarks = 4096

func (s *markSet) has(k string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.m[k]
	return ok
}

func (s *markSet) add(k string) {
	if k == "" {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil || len(s.m) >= maxPrepareMarks {
		s.m = make(map[string]struct{})
	}
	s.m[k] = struct{}{}
}
