package llm

import (
	"context"

	"github.com/condense-proxy/condense-proxy/condense"
	"github.com/condense-proxy/condense-proxy/view"
)

// Summarizer writes condense's summaries with its Clients: the built-in
// (or configured) prompt as the system message, the transcript as the
// user message, the caller's credentials on the request. A summary is
// asked in the API of the codec of the request being condensed
// (condense.SummaryInput.Codec) when a client speaks it (by Format()), in
// Client's otherwise.
type Summarizer struct {
	// Client asks the summaries no client of Clients is for (chat
	// completions, in the proxy).
	Client *Client
	// Clients ask the summaries of requests of their codecs' formats.
	Clients []*Client
	// API is the API summaries are asked in: "auto" or "" (the API of the
	// request's codec), else a codec's Format() ("chat", "messages",
	// "responses"). An API without a client here falls back to Client.
	API string
	// Reasoning reports whether a model is a reasoning model, asked with
	// room for its reasoning and no temperature (the model registry
	// decides). Nil: none is.
	Reasoning func(model string) bool
}

var _ condense.Summarizer = (*Summarizer)(nil)

// Summarize implements condense.Summarizer.
func (s *Summarizer) Summarize(ctx context.Context, in condense.SummaryInput) (string, error) {
	call := Call{Model: in.Model, System: in.Prompt, User: condense.UserPrompt(in), MaxTokens: in.MaxTokens,
		Credentials: in.Credentials, Reasoning: s.Reasoning != nil && s.Reasoning(in.Model)}
	if in.Body != nil && s.InPlace(in.Codec) {
		// Asked in place, in the request's own API; a failure (the model
		// called a tool, the upstream refused the form) falls back to the
		// plain call below.
		ask := call
		ask.Body = in.Body
		text, err := s.clientFor(format(in.Codec)).Complete(ctx, ask)
		if err == nil || ctx.Err() != nil {
			return text, err
		}
	}
	return s.complete(ctx, s.api(in.Codec), call)
}

// complete sends call through the client of api (Client when there is
// none for it).
func (s *Summarizer) complete(ctx context.Context, api string, call Call) (string, error) {
	if c := s.clientFor(api); c != nil {
		return c.Complete(ctx, call)
	}
	return s.Client.Complete(ctx, call)
}

// clientFor returns the client whose codec's format is api (nil: none).
func (s *Summarizer) clientFor(api string) *Client {
	if api == "" {
		return nil
	}
	for _, c := range s.Clients {
		if c != nil && format(c.Codec) == api {
			return c
		}
	}
	if s.Client != nil && format(s.Client.Codec) == api {
		return s.Client
	}
	return nil
}

// InPlace reports whether summaries of requests of codec c can be asked in
// place (condense.SummaryInput.Body): whether a client speaks its API.
func (s *Summarizer) InPlace(c view.Codec) bool { return s.clientFor(format(c)) != nil }

// api returns the API a summary of a request of codec c is asked in: the
// configured one, else the codec's own.
func (s *Summarizer) api(c view.Codec) string {
	if s.API != "" && s.API != "auto" {
		return s.API
	}
	return format(c)
}
