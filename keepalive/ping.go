package keepalive

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"
)

// outputPrice is an output token's price in input tokens: an estimate
// (Claude's and GPT's output costs 4–8 times their input), used to price
// the output a ping may produce.
const outputPrice = 5

// Minimum output limits the APIs accept.
const (
	minOutput          = 1  // max_tokens, max_completion_tokens
	minResponsesOutput = 16 // Responses' max_output_tokens
)

// Wire formats, as codecs' Format names them.
const (
	FormatChat      = "chat"
	FormatMessages  = "messages"
	FormatResponses = "responses"
)

// errNoPing is a body a ping cannot be made of.
var errNoPing = errors.New("not a request a ping can be made of")

// pingBody returns body with only what makes it cheap changed: the output
// limit at the API's minimum, stream false, stream_options dropped. out
// is the most output tokens the ping may cost: more than the minimum when
// the request thinks (Messages and chat through LiteLLM: extended
// thinking's budget must stay as it was, or the cached messages are lost,
// and the limit must exceed it).
func pingBody(format string, body []byte, reasoning bool) (ping []byte, out int, err error) {
	if !gjson.ValidBytes(body) || !gjson.GetBytes(body, "@this").IsObject() {
		return nil, 0, errNoPing
	}
	limitKey, limit := "max_tokens", minOutput
	switch format {
	case FormatResponses:
		limitKey, limit = "max_output_tokens", minResponsesOutput
	case FormatChat:
		if reasoning || gjson.GetBytes(body, "max_completion_tokens").Exists() {
			limitKey = "max_completion_tokens"
		}
	case FormatMessages:
	default:
		return nil, 0, errNoPing
	}
	if format != FormatResponses {
		switch th := gjson.GetBytes(body, "thinking"); {
		case !th.IsObject() || th.Get("type").String() == "disabled":
		case th.Get("type").String() == "enabled":
			budget := int(th.Get("budget_tokens").Int())
			if budget <= 0 {
				return nil, 0, errNoPing
			}
			limit = budget + 1
		default:
			// Adaptive or unknown thinking: its output limit is not ours
			// to judge; the ping keeps it and is priced at it.
			cur := gjson.GetBytes(body, limitKey)
			if cur.Type != gjson.Number || cur.Int() < 1 {
				return nil, 0, errNoPing
			}
			limit = int(cur.Int())
		}
	}
	ping = bytes.Clone(body)
	if ping, err = sjson.SetBytes(ping, limitKey, limit); err != nil {
		return nil, 0, fmt.Errorf("setting %s: %w", limitKey, err)
	}
	if gjson.GetBytes(ping, "stream").Exists() {
		if ping, err = sjson.SetBytes(ping, "stream", false); err != nil {
			return nil, 0, fmt.Errorf("setting stream: %w", err)
		}
	}
	if gjson.GetBytes(ping, "stream_options").Exists() {
		if ping, err = sjson.DeleteBytes(ping, "stream_options"); err != nil {
			return nil, 0, fmt.Errorf("dropping stream_options: %w", err)
		}
	}
	return ping, limit, nil
}

// worth reports whether a ping of a prompt of prompt tokens, producing at
// most out tokens, costs less than the re-write of that prompt it saves
// (the next request writing the cache instead of reading it).
func worth(m Model, prompt, out int) bool {
	cost := float64(prompt)*m.CacheRead + float64(out)*outputPrice
	saved := float64(prompt) * (m.CacheWrite - m.CacheRead)
	return cost < saved
}

// cost is what a ping's usage cost, in input tokens.
func cost(m Model, u Usage) float64 {
	return float64(u.CacheRead)*m.CacheRead + float64(u.CacheWrite)*m.CacheWrite + float64(u.Uncached) +
		float64(u.Output)*outputPrice
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
