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
}

var _ condense.Summarizer = (*Summarizer)(nil)

// Summarize implements condense.Summarizer.
func (s *Summarizer) Summarize(ctx context.Context, in condense.SummaryInput) (string, error) {
	return s.Client.Complete(ctx, Call{Model: in.Model, System: in.Prompt, User: condense.UserPrompt(in), MaxTokens: in.MaxTokens, Credentials: in.Credentials})
}
