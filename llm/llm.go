// Package llm is a minimal client for one non-streaming OpenAI-compatible
// chat completion, used to write summaries.
//
// A Client is safe for concurrent use. Every call takes the caller's
// context and credentials; the client keeps neither.
package llm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
)

// Client calls {BaseURL}/v1/chat/completions.
type Client struct {
	// BaseURL is the upstream base, as the proxy uses it.
	BaseURL *url.URL
	// HTTP sends the request. Nil: http.DefaultClient.
	HTTP *http.Client
}

// Call is one completion request.
type Call struct {
	Model       string
	System      string
	User        string
	MaxTokens   int
	Credentials http.Header // Authorization and similar, copied onto the request
	// Reasoning asks a reasoning model (OpenAI's o-series, gpt-5): the
	// bound is sent as max_completion_tokens, with ReasoningHeadroom added
	// for the reasoning it counts, and no temperature (they take only the
	// default). Otherwise max_tokens and temperature 0.
	Reasoning bool
	// Body, if set, is the whole request, built by the caller in the
	// client's API (a summary asked in place: the conversation as the
	// agent sent it, then the instruction): it is sent as it is, and
	// Model, System, User, MaxTokens and Reasoning are not used.
	Body []byte
}

// ReasoningHeadroom is added to a reasoning model's bound: its reasoning
// tokens count against max_completion_tokens, and an answer cut off while
// still reasoning is empty.
const ReasoningHeadroom = 8192

// ErrEmpty is returned when the upstream answered without text.
var ErrEmpty = errors.New("empty completion")

// maxAnswer bounds the answer body read.
const maxAnswer = 4 << 20

// Complete returns the assistant's text.
func (c *Client) Complete(ctx context.Context, call Call) (string, error) {
	payload := map[string]any{
		"model":  call.Model,
		"stream": false,
		"messages": []map[string]string{
			{"role": "system", "content": call.System},
			{"role": "user", "content": call.User},
		},
	}
	if call.Reasoning {
		payload["max_completion_tokens"] = call.MaxTokens + ReasoningHeadroom
	} else {
		payload["max_tokens"] = call.MaxTokens
		payload["temperature"] = 0
	}
	data, err := post(ctx, c.HTTP, endpoint(c.BaseURL, "chat", "completions"), call.payload(payload), call.Credentials, nil)
	if err != nil {
		return "", err
	}
	var out struct {
		Choices []struct {
			Message struct {
				Content string `json:"content"`
			} `json:"message"`
		} `json:"choices"`
	}
	if err := json.Unmarshal(data, &out); err != nil {
		return "", fmt.Errorf("decoding summarizer answer: %w", err)
	}
	if len(out.Choices) == 0 || strings.TrimSpace(out.Choices[0].Message.Content) == "" {
		return "", ErrEmpty
	}
	return strings.TrimSpace(out.Choices[0].Message.Content), nil
}

// payload is what a call sends: its Body when it has one, built
// otherwise.
func (c Call) payload(built any) any {
	if c.Body != nil {
		return c.Body
	}
	return built
}

// endpoint is base's /v1/<path>, without doubling a base that ends in /v1.
func endpoint(base *url.URL, path ...string) string {
	if strings.HasSuffix(strings.TrimSuffix(base.Path, "/"), "/v1") {
		return base.JoinPath(path...).String()
	}
	return base.JoinPath(append([]string{"v1"}, path...)...).String()
}

// post sends payload as JSON to u with the caller's credentials (and the
// extra headers), and returns the answer's body (at most maxAnswer bytes)
// when the status is 200.
func post(ctx context.Context, hc *http.Client, u string, payload any, creds, extra http.Header) ([]byte, error) {
	body, ok := payload.([]byte)
	if !ok {
		var err error
		if body, err = json.Marshal(payload); err != nil {
			return nil, fmt.Errorf("encoding summarizer request: %w", err)
		}
	}
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
