package fakeupstream

import (
	"io"
	"net/http"
	"sync"
	"time"
)

// DefaultDelay is the pause the Messages and Responses fakes make before
// each answer. Real providers never answer within microseconds; a fake that
// does exposes a rare stdlib reverse-proxy race (a stream cut mid-way,
// golang/go#40747) that makes agent tests flaky.
const DefaultDelay = 2 * time.Millisecond

// recorder keeps what a fake received, for the Messages and Responses
// fakes. Safe for concurrent use.
type recorder struct {
	mu       sync.Mutex
	received []Received
}

func (l *recorder) add(r *http.Request, body []byte, status, tokens int, msg string) {
	l.addAnswered(r, body, status, tokens, msg, "")
}

// addAnswered records a request and, for a summarizer call, the text
// answered.
func (l *recorder) addAnswered(r *http.Request, body []byte, status, tokens int, msg, answer string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.received) >= maxReceived {
		l.received = append(l.received[:0], l.received[maxReceived/2:]...)
	}
	l.received = append(l.received, Received{
		Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery, Header: r.Header.Clone(), Body: body,
		Status: status, Tokens: tokens, Error: msg, Answer: answer,
	})
}

// receive reads r's body and waits the fake's delay; fail records r with
// an error's status and message and answers it in the API's shape
// (write). A body that could not be read is the caller's to refuse.
func (l *recorder) receive(w http.ResponseWriter, r *http.Request, delay time.Duration, write func(http.ResponseWriter, *APIError)) (body []byte, fail func(e *APIError, tokens int), err error) {
	body, err = io.ReadAll(r.Body)
	pause(r, delay)
	return body, func(e *APIError, tokens int) {
		l.add(r, body, e.Status, tokens, e.Message)
		write(w, e)
	}, err
}

// Received returns a copy of what the fake received so far, oldest first.
func (l *recorder) Received() []Received {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]Received(nil), l.received...)
}

// Rejected returns the received requests answered with a status other
// than 2xx.
func (l *recorder) Rejected() []Received {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []Received
	for _, r := range l.received {
		if r.Status < 200 || r.Status > 299 {
			out = append(out, r)
		}
	}
	return out
}

// Reset forgets what was received.
func (l *recorder) Reset() {
	l.mu.Lock()
	l.received = nil
	l.mu.Unlock()
}

// Take removes and returns the received requests whose header key has
// value v (for callers sharing one fake).
func (l *recorder) Take(key, v string) []Received {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []Received
	kept := l.received[:0]
	for _, r := range l.received {
		if r.Header.Get(key) == v {
			out = append(out, r)
		} else {
			kept = append(kept, r)
		}
	}
	l.received = kept
	return out
}

// pause waits d (DefaultDelay when zero, none when negative) or until the
// request is cancelled.
func pause(r *http.Request, d time.Duration) {
	if d == 0 {
		d = DefaultDelay
	}
	if d < 0 {
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-r.Context().Done():
	}
}

// Mux routes a request to the fake of its wire format: /v1/messages…
// (count_tokens included) to m, /v1/responses… to resp, everything else
// (chat completions, models, Claude Code's HEAD /) to chat. A nil fake's
// requests go to chat; with chat nil too, they get 404.
func Mux(chat *Server, m *Messages, resp *Responses) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case m != nil && isMessagesPath(r.URL.Path):
			m.ServeHTTP(w, r)
		case resp != nil && isResponsesPath(r.URL.Path):
			resp.ServeHTTP(w, r)
		case chat != nil:
			chat.ServeHTTP(w, r)
		default:
			http.NotFound(w, r)
		}
	})
}

// TakeSummaries removes and returns the received requests that are
// condense-proxy summarizer calls (IsSummaryRequest).
func (l *recorder) TakeSummaries() []Received {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []Received
	kept := l.received[:0]
	for _, r := range l.received {
		if IsSummaryRequest(r.Body) {
			out = append(out, r)
		} else {
			kept = append(kept, r)
		}
	}
	l.received = kept
	return out
}

// summaryAnswer is text when body is a summarizer call, "" otherwise.
func summaryAnswer(body []byte, text string) string {
	if IsSummaryRequest(body) {
		return text
	}
	return ""
}
