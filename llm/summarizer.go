package llm

import (
	"context"

	"github.com/condense-proxy/condense-proxy/codec/chat"
	"github.com/condense-proxy/condense-proxy/codec/messages"
	"github.com/condense-proxy/condense-proxy/codec/responses"
	"github.com/condense-proxy/condense-proxy/condense"
	"github.com/condense-proxy/condense-proxy/view"
)

// Summarizer writes condense's summaries with a Client: the built-in (or
// configured) prompt as the system message, the transcript as the user
// message, the caller's credentials on the request. A summary is asked in
// the API of the codec of the request being condensed
// (condense.SummaryInput.Codec): a Messages request's through Messages, a
// Responses request's through Responses, any other through Client.
type Summarizer struct {
	Client *Client
	// Responses, if set, asks the summaries of requests of the Responses
	// codec (see API); nil: every summary goes through Client.
	Responses *ResponsesClient
	// Messages, if set, asks the summaries of requests of the Messages
	// codec; nil: they go through Client.
	Messages *MessagesClient
	// API is the API summaries are asked in: "auto" or "" (the API of the
	// request's codec), "chat", "messages" or "responses". An API without
	// a client here falls back to chat completions.
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
	if in.Body != nil && s.InPlace(in.Codec) {
		// Asked in place, in the request's own API; a failure (the model
		// called a tool, the upstream refused the form) falls back to the
		// plain call below.
		ask := call
		ask.Body = in.Body
		text, err := s.complete(ctx, codecAPI(in.Codec), ask)
		if err == nil || ctx.Err() != nil {
			return text, err
		}
	}
	return s.complete(ctx, s.api(in.Codec), call)
}

// complete sends call through the client of api (chat completions when
// there is none for it).
func (s *Summarizer) complete(ctx context.Context, api string, call Call) (string, error) {
	switch api {
	case responses.Format:
		if s.Responses != nil {
			return s.Responses.Complete(ctx, call)
		}
	case messages.Format:
		if s.Messages != nil {
			return s.Messages.Complete(ctx, call)
		}
	}
	return s.Client.Complete(ctx, call)
}

// InPlace reports whether summaries of requests of codec c can be asked in
// place (condense.SummaryInput.Body): whether there is a client for its
// API.
func (s *Summarizer) InPlace(c view.Codec) bool {
	switch c.(type) {
	case *responses.Codec:
		return s.Responses != nil
	case *messages.Codec:
		return s.Messages != nil
	case *chat.Codec:
		return s.Client != nil
	}
	return false
}

// api returns the API a summary of a request of codec c is asked in: the
// configured one, else the codec's own.
func (s *Summarizer) api(c view.Codec) string {
	if s.API != "" && s.API != "auto" {
		return s.API
	}
	return codecAPI(c)
}

// codecAPI is the API of codec c's requests (chat completions for any
// codec but Messages and Responses).
func codecAPI(c view.Codec) string {
	switch c.(type) {
	case *responses.Codec:
		return responses.Format
	case *messages.Codec:
		return messages.Format
	}
	return "chat"
}
