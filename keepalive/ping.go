package keepalive

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"strconv"
	"strings"
)

// defaultOutputPrice is an output token's price in input tokens when the
// model's is not known (Claude's: 5), used to price the output a ping may
// produce.
const defaultOutputPrice = 5

// outputPrice is m's output price in input tokens.
func (m Model) outputPrice() float64 {
	if m.OutputPrice > 0 {
		return m.OutputPrice
	}
	return defaultOutputPrice
}

// pingsWorth is how many pings an idle gap may take, each reading a
// prompt of prompt tokens and producing at most out: as many as cost,
// together, less than what letting the cache expire adds to the next turn
// (whose size as received is about next tokens). That is the rent-or-buy
// rule: whatever the gap's length, the gap costs at most twice the cheaper
// of pinging it through and letting it go. Going cold, the next turn
// writes its prompt instead of reading it — or, when the engine condenses
// a cold turn (coldCondenses), writes only what the condensed request
// keeps. (What a cold condensation saves on the turns after it, and the
// condensation a warm conversation over the threshold soon needs anyway,
// are left out: both would favour letting it go.)
func pingsWorth(m Model, prompt, next, out int) int {
	ping := float64(prompt)*m.CacheRead + float64(out)*m.outputPrice()
	written := prompt
	if coldCondenses(m, next) {
		written = min(prompt, m.ColdTo)
	}
	extra := float64(written)*m.CacheWrite - float64(prompt)*m.CacheRead
	if ping <= 0 || extra <= ping {
		return 0
	}
	// n pings with n × ping < extra.
	return int(math.Ceil(extra/ping)) - 1
}

// coldCondenses reports whether the engine condenses a cold turn of next
// tokens as received.
func coldCondenses(m Model, next int) bool { return m.ColdTo > 0 && next > m.ColdAbove }

// cost is what a ping's usage cost, in input tokens.
func cost(m Model, u Usage) float64 {
	return float64(u.CacheRead)*m.CacheRead + float64(u.CacheWrite)*m.CacheWrite + float64(u.Uncached) +
		float64(u.Output)*m.outputPrice()
}

// maxPingAnswer bounds the ping's answer read (a one-token answer).
const maxPingAnswer = 1 << 20

// send sends one ping and returns its answer's usage.
func (k *Keeper) send(ctx context.Context, p *pending) (Usage, error) {
	u := *k.o.Upstream
	u.Path = strings.TrimSuffix(u.Path, "/") + p.path
	u.RawPath = ""
	switch {
	case u.RawQuery == "":
		u.RawQuery = p.rawQuery
	case p.rawQuery != "":
		u.RawQuery += "&" + p.rawQuery
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.String(), bytes.NewReader(p.body))
	if err != nil {
		return Usage{}, fmt.Errorf("making the ping: %w", err)
	}
	req.Header = p.header.Clone()
	// The transport asks for and undoes its own compression.
	req.Header.Del("Accept-Encoding")
	req.Header.Set("Content-Length", strconv.Itoa(len(p.body)))
	req.ContentLength = int64(len(p.body))
	res, err := k.o.Transport.RoundTrip(req)
	if err != nil {
		return Usage{}, fmt.Errorf("sending the ping: %w", err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		io.Copy(io.Discard, io.LimitReader(res.Body, maxPingAnswer))
		return Usage{}, fmt.Errorf("the upstream answered the ping with %d", res.StatusCode)
	}
	ar := p.codec.AnswerReader(isSSE(res.Header.Get("Content-Type")))
	if _, err := io.Copy(ar, io.LimitReader(res.Body, maxPingAnswer)); err != nil {
		return Usage{}, fmt.Errorf("reading the ping's answer: %w", err)
	}
	return ar.Outcome().Usage, nil
}
