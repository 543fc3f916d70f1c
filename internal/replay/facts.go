package replay

import (
	"context"
	"strings"

	"github.com/condense-proxy/condense-proxy/internal/corpus"
)

// FactCount is what a replay measured of one kind of fact: over condensed
// requests, facts present as sent (Seen) and still present as forwarded
// (Kept); of the distinct facts condensed away, those probed through the
// recall search (Probes) and those a step holding them answered among the
// best RecallTop (Recalled).
type FactCount struct {
	Seen     int `json:"seen"`
	Kept     int `json:"kept"`
	Probes   int `json:"probes,omitempty"`
	Recalled int `json:"recalled,omitempty"`
}

// RecallTop is how many of the recall search's best results a probe
// looks at.
const RecallTop = 3

// probeWords bounds a probe's query: what a model asks the recall tool
// is a few words, not a whole line.
const probeWords = 12

// ProbeQuery is the recall query a probe of f asks: the fact's first
// probeWords words (a path, a test's name, an error's leading words, the
// task's start), as a model would search for it.
func ProbeQuery(f corpus.Fact) string {
	w := strings.Fields(f.Text)
	return strings.Join(w[:min(len(w), probeWords)], " ")
}

// facts checks the facts present in what was sent (sentText, white space
// folded) against what was forwarded (fwdText), counted by kind and, when
// total, in the totals; and queues the facts condensed away for a recall
// probe.
func (res *Result) facts(applied string, facts []corpus.Fact, sentText, fwdText string, total bool) {
	for _, f := range facts {
		ft := norm(f.Text)
		if !strings.Contains(sentText, ft) {
			continue
		}
		if res.FactsByKind == nil {
			res.FactsByKind = map[string]FactCount{}
		}
		if total && res.FactsByApplied == nil {
			res.FactsByApplied = map[string][2]int{}
		}
		by := res.FactsByApplied[applied]
		kind := res.FactsByKind[f.Kind]
		kept := strings.Contains(fwdText, ft)
		kind.Seen++
		if kept {
			kind.Kept++
		}
		if total {
			res.FactsSeen++
			by[0]++
			if kept {
				res.FactsKept++
				by[1]++
			}
			res.FactsByApplied[applied] = by
		}
		if !kept {
			if total && len(res.Lost) < 10 {
				res.Lost = append(res.Lost, applied+" "+f.Kind+": "+f.Text)
			}
			if key := f.Kind + "\x00" + ft; !res.probed[key] {
				if res.probed == nil {
					res.probed = map[string]bool{}
				}
				res.probed[key] = true
				res.pending = append(res.pending, f)
			}
		}
		res.FactsByKind[f.Kind] = kind
	}
}

// holds reports whether text holds fact as a whole: not inside a longer
// word or number ("decision 6" is not in "decision 61", "pkg/a/f3.go" not
// in "pkg/a/f31.go").
func holds(text, fact string) bool {
	if fact == "" {
		return false
	}
	for off := 0; ; {
		i := strings.Index(text[off:], fact)
		if i < 0 {
			return false
		}
		i += off
		end := i + len(fact)
		if (i == 0 || !wordByte(fact[0]) || !wordByte(text[i-1])) && (end == len(text) || !wordByte(fact[len(fact)-1]) || !wordByte(text[end])) {
			return true
		}
		off = i + 1
	}
}

func wordByte(c byte) bool {
	return c == '_' || '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
}

// probe asks recall for each fact condensed away since the last probe:
// a hit when one of the first RecallTop texts it returns (steps of the
// memory, best first) holds the fact (holds: as a whole). Without recall the facts are not probed.
func (res *Result) probe(ctx context.Context, recall func(context.Context, string) []string) {
	pending := res.pending
	res.pending = nil
	if recall == nil {
		return
	}
	for _, f := range pending {
		q := ProbeQuery(f)
		ft := norm(f.Text)
		hit := false
		for i, t := range recall(ctx, q) {
			if i == RecallTop {
				break
			}
			if holds(norm(t), ft) {
				hit = true
				break
			}
		}
		kind := res.FactsByKind[f.Kind]
		kind.Probes++
		res.RecallProbes++
		if hit {
			kind.Recalled++
			res.RecallTop3++
		} else if len(res.Unrecalled) < 10 {
			res.Unrecalled = append(res.Unrecalled, f.Kind+": "+f.Text+" (query "+q+")")
		}
		res.FactsByKind[f.Kind] = kind
	}
}
