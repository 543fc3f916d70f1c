package view

import "errors"

// SummaryAPI is an optional capability of a Codec: it speaks its format
// to a summarizer — a request for one summary, and the text of the
// answer. Package llm posts the request (credentials, errors, bounds);
// what the request and the answer look like is the codec's.
type SummaryAPI interface {
	// SummaryPath is the path, under the upstream's base, a summary by
	// model is asked at ("/v1/chat/completions"; a format may name the
	// model in it), and headers every such request carries unless the
	// caller's own headers have them (an API version).
	SummaryPath(model string) (path string, defaults []Header)
	// SummaryRequest returns the body of a request for one summary, not
	// streamed.
	SummaryRequest(s Summary) ([]byte, error)
	// SummaryText returns the text of an answer to a summary request (or
	// to a request an Asker wrote): ErrNoText when it carries none, an
	// error when it is not an answer or says it failed. An answer cut at
	// its bound still carries a usable summary when it has text.
	SummaryText(answer []byte) (string, error)
}

// Summary is one summary asked of a model.
type Summary struct {
	Model string
	// System is the summarizer's instructions; User the text to
	// summarize, with what to do with it.
	System, User string
	// MaxTokens bounds the summary.
	MaxTokens int
	// Reasoning: the model reasons (OpenAI's o-series, gpt-5): its bound
	// leaves room for the reasoning, and it takes no temperature.
	Reasoning bool
}

// ErrNoText is an answer without text.
var ErrNoText = errors.New("empty completion")
