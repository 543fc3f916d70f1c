package replay

import (
	"strings"

	"github.com/cespare/xxhash/v2"
	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"
)

// forwardedLog remembers the shape of every request a replay forwarded
// (a hash per item, in the form items are compared, and the fields
// outside the items that a prompt holds), so a summarizer call asked in
// place (condense/inplace.go) can be priced as a provider would: its
// longest run of leading items identical to a request forwarded before it
// in the session, with the same system, tools and instructions, is read
// from the provider's cache.
type forwardedLog struct {
	arrKey string
	same   func(gjson.Result) string // an item as compared (cache_control markers left out)
	reqs   []forwardedShape
}

type forwardedShape struct {
	outside string
	items   []uint64
}

func newForwardedLog(arrKey string, same func(gjson.Result) string) *forwardedLog {
	if same == nil {
		same = func(m gjson.Result) string { return m.Raw }
	}
	return &forwardedLog{arrKey: arrKey, same: same}
}

// promptOutside is what a request's prompt holds outside its items.
func promptOutside(body []byte) string {
	r := gjson.GetManyBytes(body, "system", "tools", "instructions", "systemInstruction")
	return r[0].Raw + "\x00" + r[1].Raw + "\x00" + r[2].Raw + "\x00" + r[3].Raw
}

func (l *forwardedLog) shape(body []byte) (forwardedShape, []gjson.Result) {
	items := gjson.GetBytes(body, l.arrKey).Array()
	s := forwardedShape{outside: promptOutside(body), items: make([]uint64, len(items))}
	for i, m := range items {
		s.items[i] = xxhash.Sum64String(l.same(m))
	}
	return s, items
}

func (l *forwardedLog) add(body []byte) {
	s, _ := l.shape(body)
	l.reqs = append(l.reqs, s)
}

// cached returns how many tokens of a summarizer call's body a provider
// would serve from its cache, 0 below minCached: the body cut to its
// leading items identical to a request forwarded before it, counted as
// the whole body is (count).
func (l *forwardedLog) cached(body []byte, count func([]byte) int) int {
	s, items := l.shape(body)
	best := 0
	for _, r := range l.reqs {
		if r.outside != s.outside {
			continue
		}
		k := 0
		for k < len(r.items) && k < len(s.items) && r.items[k] == s.items[k] {
			k++
		}
		if n := len(r.items); k >= n-1 && n >= len(s.items)-1 && n <= len(s.items) {
			// The request the call was asked from (the call is it, then
			// the instruction): the provider may not have cached it yet,
			// and what was forwarded after it, later still, counts less.
			break
		}
		best = max(best, k)
	}
	if best == 0 {
		return 0
	}
	raws := make([]string, best)
	for i, m := range items[:best] {
		raws[i] = m.Raw
	}
	lead, err := sjson.SetRawBytes(body, l.arrKey, []byte("["+strings.Join(raws, ",")+"]"))
	if err != nil {
		return 0
	}
	if n := count(lead); n >= minCached {
		return n
	}
	return 0
}

// minCached is the shortest prefix providers cache.
const minCached = 1024

// addSummarizerCall counts one summarizer call of in tokens: what a
// provider would serve of it from its cache, and the rest of a call asked
// in place.
func (r *Result) addSummarizerCall(in, cached int) {
	r.SummarizerCalls++
	r.SummarizerTokensIn += in
	if cached > 0 {
		cached = min(cached, in)
		r.SummarizerTokensCached += cached
		r.SummarizerTokensInPlace += in - cached
	}
}
