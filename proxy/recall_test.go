package proxy

import (
	"bufio"
	"io"
	"strings"
	"testing"
)

// TestSniffAnswer: an answer is told by its first bytes, which stay to be
// read; no more is read than the kind needs (a stream's first event may
// be all there is for a while).
func TestSniffAnswer(t *testing.T) {
	cases := []struct {
		name, body string
		want       int
	}{
		{"JSON", `{"choices":[]}`, answerJSON},
		{"JSON after white space and a BOM", "\uFEFF \r\n\t{}", answerJSON},
		{"data", "data: {}\n\n", answerStream},
		{"event", "event: message_start\ndata: {}\n\n", answerStream},
		{"comment", ": keep-alive\n\n", answerStream},
		{"retry", "retry: 10\n\n", answerStream},
		{"id", "id: 1\ndata: x\n\n", answerStream},
		{"text", "Internal error", answerOther},
		{"a word like a field", "dat", answerOther},
		{"JSON array", `[{"a":1}]`, answerOther},
		{"empty", "", answerOther},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rd := bufio.NewReaderSize(strings.NewReader(tc.body), 64<<10)
			if got := sniffAnswer(rd); got != tc.want {
				t.Errorf("kind %d, want %d", got, tc.want)
			}
			rest, _ := io.ReadAll(rd)
			if string(rest) != tc.body {
				t.Errorf("the body read after sniffing is %q", rest)
			}
		})
	}
	// A stream whose first bytes are all there is yet: sniffing does not
	// wait for more.
	pr, pw := io.Pipe()
	go pw.Write([]byte("data:"))
	if got := sniffAnswer(bufio.NewReaderSize(pr, 64<<10)); got != answerStream {
		t.Errorf("kind %d, want a stream", got)
	}
	pw.Close()
}
