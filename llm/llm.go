// Package llm is a minimal client for one non-streaming summary asked of
// the upstream, in the API of a codec (view.SummaryAPI): the codec writes
// the request and reads the answer's text; this package posts it with
// the caller's credentials, bounds what it reads and reports failures.
//
// A Client is safe for concurrent use. Every call takes the caller's
// context and credentials; the client keeps neither.
package llm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/condense-proxy/condense-proxy/view"
)

// Client asks summaries at {BaseURL}<the codec's summary path>.
type Client struct {
	// BaseURL is the upstream base, as the proxy uses it.
	BaseURL *url.URL
	// HTTP sends the request. Nil: http.DefaultClient.
	HTTP *http.Client
	// Codec is the API the client asks in; it must be a
	// view.SummaryAPI.
	Codec view.Codec
}

// Call is one summary request.
type Call struct {
	Model       string
	System      string
	User        string
	MaxTokens   int
	Credentials http.Header // Authorization and similar, copied onto the request
	// Reasoning asks a reasoning model (OpenAI's o-series, gpt-5): the
	// codec leaves room for its reasoning in the bound, and sets no
	// temperature (they take only the default).
	Reasoning bool
	// Body, if set, is the whole request, built by the caller in the
	// client's API (a summary asked in place: the conversation as the
	// agent sent it, then the instruction): it is sent as it is, and
	// Model, System, User, MaxTokens and Reasoning are not used.
	Body []byte
}

// ReasoningHeadroom is added to a reasoning model's bound in chat
// completions: its reasoning tokens count against the bound, and an
// answer cut off while still reasoning is empty.
const ReasoningHeadroom = view.ReasoningRoom

// ErrEmpty is returned when the upstream answered without text.
var ErrEmpty = view.ErrNoText

// maxAnswer bounds the answer body read.
const maxAnswer = 4 << 20

// Complete returns the answer's text.
func (c *Client) Complete(ctx context.Context, call Call) (string, error) {
	api, ok := c.Codec.(view.SummaryAPI)
	if !ok {
		return "", fmt.Errorf("summarizer: the %s API asks no summaries", format(c.Codec))
	}
	path, defaults := api.SummaryPath(call.Model)
	body := call.Body
	if body == nil {
		var err error
		body, err = api.SummaryRequest(view.Summary{Model: call.Model, System: call.System, User: call.User,
			MaxTokens: call.MaxTokens, Reasoning: call.Reasoning})
		if err != nil {
			return "", fmt.Errorf("encoding summarizer request: %w", err)
		}
	}
	var extra http.Header
	for _, h := range defaults {
		if call.Credentials.Get(h.Name) == "" {
			if extra == nil {
				extra = http.Header{}
			}
			extra.Add(h.Name, h.Value)
		}
	}
	data, err := post(ctx, c.HTTP, endpoint(c.BaseURL, path), body, call.Credentials, extra)
	if err != nil {
		return "", err
	}
	text, err := api.SummaryText(data)
	switch {
	case errors.Is(err, view.ErrNoText):
		return "", ErrEmpty
	case err != nil:
		return "", fmt.Errorf("summarizer answer: %w", err)
	}
	return text, nil
}

// format is c's Format(), "" for none.
func format(c view.Codec) string {
	if c == nil {
		return ""
	}
	return c.Format()
}

// endpoint is base's path (/v1/…), without doubling a base that ends in
// /v1.
func endpoint(base *url.URL, path string) string {
	if strings.HasSuffix(strings.TrimSuffix(base.Path, "/"), "/v1") {
		if rest, ok := strings.CutPrefix(path, "/v1/"); ok {
			path = rest
		}
	}
	return base.JoinPath(path).String()
}

// post sends body to u with the caller's credentials (and the extra
// headers), and returns the answer's body (at most maxAnswer bytes) when
// the status is 200.
func post(ctx context.Context, hc *http.Client, u string, body []byte, creds, extra http.Header) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("building summarizer request: %w", err)
	}
	for _, h := range []http.Header{creds, extra} {
		for k, vs := range h {
			for _, v := range vs {
				req.Header.Add(k, v)
			}
		}
	}
	req.Header.Set("Content-Type", "application/json")
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("calling summarizer: %w", err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
	if err != nil {
		return nil, fmt.Errorf("reading summarizer answer: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("summarizer answered %d", resp.StatusCode)
	}
	return data, nil
}
