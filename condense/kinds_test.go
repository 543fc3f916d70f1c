package condense

import (
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// The prose a step or a fallback kind says, for checkKinds: each of a
// report's steps (kinds) must have one of its markers in Reason
// (Degraded); with both, a Reason (Degraded) that has one must have the
// step (kind) too. Steps whose prose is the engine's own text quoted (an
// error, an untouchable request's why) have none.
var (
	stepProse = map[string]prose{
		PathNoCodec:             says(both, "no codec"),
		PathNotRequest:          says(one, "not a "),
		PathHoldout:             says(both, "holdout arm"),
		PathObserve:             says(both, "observe"),
		PathModeOff:             says(both, "mode off"),
		PathAgentCompaction:     says(both, "agent compaction ("),
		PathWithinWindow:        says(both, " within the context window"),
		PathOverWindow:          says(both, " over the context window"),
		PathUntouchable:         says(none),
		PathUnderThreshold:      says(both, "under threshold"),
		PathEagerDigests:        says(both, "eager digests"),
		PathOverThreshold:       says(both, "over threshold"),
		PathOverMaxMessages:     says(both, "over max_messages"),
		PathForced:              says(both, "forced"),
		PathCold:                says(both, coldReason),
		PathDigests:             says(both, " tool outputs digested"),
		PathInputsShortened:     says(both, " tool inputs shortened"),
		PathAutoFolds:           says(both, autoFoldsReason),
		PathAutoSwitch:          says(both, autoSwitchReason),
		PathWindowNow:           says(both, windowNowReason),
		PathCut:                 says(both, "the oldest steps"),
		PathExtractiveAllowance: says(both, "over auto's allowance"),
		PathNoChunk:             says(both, "no complete chunk to summarize"),
		PathSummariesOverTarget: says(both, "; summaries left "),
		PathRecentStepsCut:      says(both, "verbatim steps after the summary cut"),
		PathAllVerbatim:         says(both, "every step is needed verbatim"),
		PathInvalid:             says(none),
		PathFailed:              says(none),
		PathNothingCondensed:    says(one, "nothing condensed", "no tool output to digest and no step to cut"),
		PathNotShrunk:           says(both, "did not shrink the request"),
		PathForwardedUnchanged:  says(both, "forwarded unchanged"),
	}
	degradedProse = map[string]prose{
		DegradedUntouchable:         says(both, "; not condensed"),
		DegradedSelectiveDisabled:   says(both, "selective.enabled=false"),
		DegradedTooLarge:            says(both, "too large"),
		DegradedWindow:              says(both, "sliding window used"),
		DegradedRecentOverBudget:    says(both, "older verbatim steps after the summary omitted"),
		DegradedNewestOverBudget:    says(both, "newest steps over budget"),
		DegradedSummarizerFailed:    says(both, "summarizer failed: "),
		DegradedSummarizerSuspended: says(both, "summarizer recently failing"),
		DegradedBusy:                says(both, "summarizer busy"),
		DegradedMaxWait:             says(both, "condense.max_wait"),
		DegradedCallBudget:          says(both, "condense.max_summarizer_calls"),
		DegradedCompactionKept:      says(one, "agent compaction ("),
		DegradedCompactionDigested:  says(one, "agent compaction ("),
	}
)

// prose is what a step or a kind says: its markers, and whether a text
// with one of them says it (both) or only that it has one (one).
type prose struct {
	dir     direction
	markers []string
}

type direction int

const (
	none direction = iota
	one
	both
)

func says(dir direction, markers ...string) prose { return prose{dir, markers} }

func (p prose) in(text string) bool {
	for _, m := range p.markers {
		if strings.Contains(text, m) {
			return true
		}
	}
	return false
}

// checkKinds says how r's Path and DegradedKinds differ from what its
// Reason and Degraded say: a fallback without its kind, a step or a kind
// outside the vocabulary, a step whose prose is missing or prose whose
// step is.
func checkKinds(r *Report) error {
	var errs []error
	if (r.Degraded == "") != (len(r.DegradedKinds) == 0) {
		errs = append(errs, fmt.Errorf("degraded %q, kinds %v", r.Degraded, r.DegradedKinds))
	}
	if r.Reason != "" && len(r.Path) == 0 {
		errs = append(errs, fmt.Errorf("reason %q, no path", r.Reason))
	}
	errs = append(errs, againstProse("step", r.Path, pathSteps, stepProse, r.Reason)...)
	errs = append(errs, againstProse("kind", r.DegradedKinds, degradedKinds, degradedProse, r.Degraded)...)
	for i, k := range r.DegradedKinds {
		if slices.Contains(r.DegradedKinds[:i], k) {
			errs = append(errs, fmt.Errorf("kind %s twice: %v", k, r.DegradedKinds))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("%w\n(path %v, reason %q; degraded kinds %v, degraded %q)", err, r.Path, r.Reason, r.DegradedKinds, r.Degraded)
	}
	return nil
}

// againstProse checks got, steps or kinds of vocab, against text.
func againstProse(what string, got, vocab []string, says map[string]prose, text string) []error {
	var errs []error
	for _, k := range got {
		p, ok := says[k]
		switch {
		case !ok || !slices.Contains(vocab, k):
			errs = append(errs, fmt.Errorf("%s %q is not in the vocabulary", what, k))
		case p.dir != none && !p.in(text):
			errs = append(errs, fmt.Errorf("%s %s without its prose %q", what, k, p.markers))
		}
	}
	for k, p := range says {
		if p.dir == both && p.in(text) && !slices.Contains(got, k) {
			errs = append(errs, fmt.Errorf("prose %q without its %s %s", p.markers, what, k))
		}
	}
	return errs
}

var kinds struct {
	sync.Mutex
	failed int
	first  error
}

// recordKinds checks a report Condense returns (reportHook, set by
// TestMain) and keeps the first failure.
func recordKinds(r *Report) {
	err := checkKinds(r)
	if err == nil {
		return
	}
	kinds.Lock()
	defer kinds.Unlock()
	if kinds.failed++; kinds.first == nil {
		kinds.first = err
	}
}

func kindFailures() (int, error) {
	kinds.Lock()
	defer kinds.Unlock()
	return kinds.failed, kinds.first
}

// TestKindsCheckFails: the check every report of the package's tests
// passes (TestMain) fails a report whose kinds do not tell its prose.
func TestKindsCheckFails(t *testing.T) {
	good := Report{Reason: "over threshold" + autoFoldsReason, Path: []string{PathOverThreshold, PathAutoFolds},
		Degraded: "summarizer failed: 502", DegradedKinds: []string{DegradedSummarizerFailed}}
	if err := checkKinds(&good); err != nil {
		t.Fatalf("a report that says what it did: %v", err)
	}
	for name, bad := range map[string]func(r *Report){
		"a fallback without its kind":  func(r *Report) { r.DegradedKinds = nil },
		"a kind without its fallback":  func(r *Report) { r.Degraded = "" },
		"a kind not in the vocabulary": func(r *Report) { r.DegradedKinds = []string{"summarizer failed"} },
		"a kind twice":                 func(r *Report) { r.DegradedKinds = []string{DegradedSummarizerFailed, DegradedSummarizerFailed} },
		"another kind than the prose":  func(r *Report) { r.DegradedKinds = []string{DegradedMaxWait} },
		"a reason without a path":      func(r *Report) { r.Path = nil },
		"a step not in the vocabulary": func(r *Report) { r.Path = append(r.Path, "folds") },
		"a step without its prose":     func(r *Report) { r.Path = append(r.Path, PathCold) },
		"prose without its step":       func(r *Report) { r.Path = r.Path[:1] },
	} {
		r := good
		bad(&r)
		if checkKinds(&r) == nil {
			t.Errorf("%s: passes", name)
		}
	}
}

// TestKindsVocabulary: the vocabularies list every step and kind kinds.go
// declares, once, each a snake_case word with its prose for the check.
func TestKindsVocabulary(t *testing.T) {
	declared := map[string][]string{}
	for name, v := range constValues() {
		for _, p := range []string{"Path", "Degraded"} {
			if strings.HasPrefix(name, p) {
				declared[p] = append(declared[p], v)
			}
		}
	}
	word := regexp.MustCompile(`^[a-z]+(_[a-z]+)*$`)
	for _, v := range []struct {
		prefix string
		list   []string
		says   map[string]prose
	}{{"Path", pathSteps, stepProse}, {"Degraded", degradedKinds, degradedProse}} {
		if !slices.Equal(slices.Sorted(slices.Values(declared[v.prefix])), slices.Sorted(slices.Values(v.list))) {
			t.Errorf("%s constants %v, listed %v", v.prefix, declared[v.prefix], v.list)
		}
		for i, k := range v.list {
			if !word.MatchString(k) || slices.Contains(v.list[:i], k) {
				t.Errorf("%s %q: not a snake_case word, or listed twice", v.prefix, k)
			}
			if _, ok := v.says[k]; !ok {
				t.Errorf("%s %q: no prose for the check (kinds_test.go)", v.prefix, k)
			}
		}
	}
}

// TestEveryFallbackNamesItsKind: every addDegraded call of the engine
// passes a kind of the vocabulary — a Degraded* constant, or the kind of a
// degradation, each of which is made with one —, and every step added to
// a Path is a Path* constant, or a step variable whose values are.
func TestEveryFallbackNamesItsKind(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	calls := 0
	for _, path := range files {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		bad := func(n ast.Node, what string) { t.Errorf("%s: %s", fset.Position(n.Pos()), what) }
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.CallExpr:
				calls += checkCall(n, bad)
			case *ast.CompositeLit:
				checkLiteral(n, bad)
			case *ast.AssignStmt:
				for i, l := range n.Lhs {
					if s, ok := l.(*ast.SelectorExpr); ok && s.Sel.Name == "Path" && i < len(n.Rhs) {
						checkPathValue(n.Rhs[i], bad)
					}
				}
			}
			return true
		})
	}
	if calls < 15 {
		t.Fatalf("%d addDegraded calls found: the test does not see the engine", calls)
	}
}

// checkCall checks an addDegraded or addReason call, and the step an
// unchanged call passes; it returns 1 for an addDegraded call.
func checkCall(c *ast.CallExpr, bad func(ast.Node, string)) int {
	id, ok := c.Fun.(*ast.Ident)
	if !ok {
		return 0
	}
	switch {
	case id.Name == "addDegraded" && len(c.Args) == 3:
		if !isConst(c.Args[1], degradedKinds, "Degraded") && !isField(c.Args[1], "kind") {
			bad(c, "addDegraded without a Degraded* kind")
		}
		return 1
	case id.Name == "addDegraded":
		bad(c, "addDegraded without a kind")
	case id.Name == "addReason" && len(c.Args) < 3:
		bad(c, "addReason without a step")
	case id.Name == "addReason":
		for _, a := range c.Args[2:] {
			if id, ok := a.(*ast.Ident); !isConst(a, pathSteps, "Path") && !isField(a, "step") && (!ok || id.Name != "step") {
				bad(a, "addReason with a step not a Path* constant")
			}
		}
	case id.Name == "unchanged" && len(c.Args) == 3:
		if !isConst(c.Args[1], pathSteps, "Path") {
			bad(c, "unchanged without a Path* step")
		}
	}
	return 0
}

// checkLiteral checks the kinds of a degradation and the steps of a
// keptError.
func checkLiteral(l *ast.CompositeLit, bad func(ast.Node, string)) {
	id, ok := l.Type.(*ast.Ident)
	if !ok {
		return
	}
	field := map[string]string{"degradation": "kind", "keptError": "step"}[id.Name]
	vocab, prefix := degradedKinds, "Degraded"
	if id.Name == "keptError" {
		vocab, prefix = pathSteps, "Path"
	}
	for i, e := range l.Elts {
		name, v := "", e
		if kv, ok := e.(*ast.KeyValueExpr); ok {
			name, v = kv.Key.(*ast.Ident).Name, kv.Value
		} else if i == 0 {
			name = field
		}
		if field != "" && name == field && !isConst(v, vocab, prefix) {
			bad(e, id.Name+" whose "+field+" is not a "+prefix+"* constant")
		}
	}
	if field != "" && len(l.Elts) > 0 && !slices.ContainsFunc(l.Elts, func(e ast.Expr) bool {
		kv, ok := e.(*ast.KeyValueExpr)
		return !ok || kv.Key.(*ast.Ident).Name == field
	}) {
		bad(l, id.Name+" without its "+field)
	}
}

// checkPathValue checks a value assigned to a report's Path: a list of
// Path* constants, or a path saved (an identifier).
func checkPathValue(v ast.Expr, bad func(ast.Node, string)) {
	switch v := v.(type) {
	case *ast.CompositeLit:
		for _, e := range v.Elts {
			if !isConst(e, pathSteps, "Path") {
				bad(e, "a Path with a step not a Path* constant")
			}
		}
	case *ast.Ident:
	case *ast.CallExpr: // append([]string{Path…}, r.Path...)
		for _, a := range v.Args {
			checkPathValue(a, bad)
		}
	case *ast.SelectorExpr:
		if v.Sel.Name != "Path" {
			bad(v, "a Path from elsewhere than a Path")
		}
	default:
		bad(v, "a Path not made of Path* constants")
	}
}

// isConst reports whether e names a constant of the vocabulary.
func isConst(e ast.Expr, vocab []string, prefix string) bool {
	id, ok := e.(*ast.Ident)
	return ok && strings.HasPrefix(id.Name, prefix) && slices.Contains(vocab, constValue(id.Name))
}

// isField reports whether e is a selector of field name (x.kind).
func isField(e ast.Expr, name string) bool {
	s, ok := e.(*ast.SelectorExpr)
	return ok && s.Sel.Name == name
}

// constValue is the value of the Path* or Degraded* constant name.
func constValue(name string) string {
	return constValues()[name]
}

var constValues = sync.OnceValue(func() map[string]string {
	f, err := parser.ParseFile(token.NewFileSet(), "kinds.go", nil, 0)
	if err != nil {
		panic(err)
	}
	out := map[string]string{}
	for _, d := range f.Decls {
		if g, ok := d.(*ast.GenDecl); ok && g.Tok == token.CONST {
			for _, s := range g.Specs {
				vs := s.(*ast.ValueSpec)
				for i, n := range vs.Names {
					out[n.Name], _ = strconv.Unquote(vs.Values[i].(*ast.BasicLit).Value)
				}
			}
		}
	}
	return out
})
