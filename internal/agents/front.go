package agents

import (
	"bytes"
	"io"
	"net/http"
	"sync"
)

// Exchange is one request the agent sent through a Front, with the answer
// the proxy gave.
type Exchange struct {
	Method, Path, Query string
	Header              http.Header // of the request
	Body                []byte      // as the agent sent it
	Status              int
	Response            http.Header // the proxy's response headers (X-Condense-*)
}

// Front records what passes between an agent and the handler it wraps:
// the agent's requests and the proxy's status and response headers. Use
// Wrap as harness.Options.Front. Safe for concurrent use.
type Front struct {
	mu        sync.Mutex
	exchanges []Exchange
}

// Wrap returns next with recording around it.
func (f *Front) Wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		rw := &recordingWriter{ResponseWriter: w}
		next.ServeHTTP(rw, r)
		if rw.status == 0 {
			rw.status = http.StatusOK
		}
		f.mu.Lock()
		f.exchanges = append(f.exchanges, Exchange{Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery,
			Header: r.Header.Clone(), Body: body, Status: rw.status, Response: rw.header})
		f.mu.Unlock()
	})
}

// Exchanges returns what was recorded, oldest first.
func (f *Front) Exchanges() []Exchange {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]Exchange(nil), f.exchanges...)
}

// recordingWriter notes the status and headers of a response and passes
// everything through, flushes included (server-sent events).
type recordingWriter struct {
	http.ResponseWriter
	status int
	header http.Header
}

func (w *recordingWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
		w.header = w.ResponseWriter.Header().Clone()
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *recordingWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.WriteHeader(http.StatusOK)
	}
	return w.ResponseWriter.Write(b)
}

func (w *recordingWriter) Flush() {
	if w.status == 0 {
		w.WriteHeader(http.StatusOK)
	}
	if fl, ok := w.ResponseWriter.(http.Flusher); ok {
		fl.Flush()
	}
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (w *recordingWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
