package llm

import (
	"context"

	"github.com/condense-proxy/condense-proxy/condense"
)

// Summarizer writes condense's summaries with a Client: the built-in (or
// configured) prompt as the system message, the transcript as the user
// message, the caller's credentials on the request.
type Summarizer struct {
	Client *Client
	// Responses, if set, asks the summaries of requests whose API is
	// "responses" (see API); nil: every summary goes through Client.
	Responses *ResponsesClient
	// Messages, if set, asks the summaries of requests whose API is
	// "messages"; nil: they go through Client.
	Messages *MessagesClient
	// API is the API summaries are asked in: "auto" or "" (the wire
	// format of the request being condensed), "chat", "messages" or
	// "responses". An
	// API without a client here falls back to chat completions.
	API string
	// Reasoning reports whether a model is a reasoning model, asked with
	// max_completion_tokens (chat) and no temperature (the model registry
	// decides). Nil: none is.
	Reasoning func(model string) bool
}

var _ condense.Summarizer = (*Summarizer)(nil)

// Summarize implements condense.Summarizer.
func (s *Summarizer) Summarize(ctx context.Context, in condense.SummaryInput) (string, error) {
	call := Call{Model: in.Model, System: in.Prompt, User: condense.UserPrompt(in), MaxTokens: in.MaxTokens,
		Credentials: in.Credentials, Reasoning: s.Reasoning != nil && s.Reasoning(in.Model)}
	if in.Body != nil && s.InPlace(in.Format) {
		// Asked in place, in the request's own API; a failure (the model
		// called a tool, the upstream refused the form) falls back to the
		// plain call below.
		ask := call
		ask.Body = in.Body
		text, err := s.complete(ctx, in.Format, ask)
		if err == nil || ctx.Err() != nil {
			return text, err
		}
	}
	api := s.API
	if api == "" || api == "auto" {
		api = in.Format
	}
	return s.complete(ctx, api, call)
}

// complete sends call through the client of api (chat completions when
// there is none for it).
func (s *Summarizer) complete(ctx context.Context, api string, call Call) (string, error) {
	if api == "responses" && s.Responses != nil {
		return s.Responses.Complete(ctx, call)
	}
	if api == "messages" && s.Messages != nil {
		return s.Messages.Complete(ctx, call)
	}
	return s.Client.Complete(ctx, call)
}

// InPlace reports whether summaries of requests in format can be asked in
// place (condense.SummaryInput.Body): whether there is a client for it.
func (s *Summarizer) InPlace(format string) bool {
	switch format {
	case "responses":
		return s.Responses != nil
	case "messages":
		return s.Messages != nil
	case "chat":
		return s.Client != nil
	}
	return false
}
