package proxy_test

import (
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	"github.com/condense-proxy/condense-proxy/internal/fakeupstream"
	"github.com/condense-proxy/condense-proxy/memory"
	"github.com/condense-proxy/condense-proxy/view"
)

// The recall loop's bounds and the answers slightly off the usual shape
// (issue 37's attack findings), end to end through the app's stack.

var formats = []string{"chat", "messages", "responses"}

// trigger is the recall stacks' threshold in tokens (harness: 0.8 of the
// 16,000-token window).
const trigger = 16000 * 8 / 10

// contentType rewrites the Content-Type of every answer of h: to ct, or
// none at all when ct is "" (net/http does not sniff one then).
type contentType struct {
	h  http.Handler
	ct string
}

func (c contentType) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	c.h.ServeHTTP(&ctWriter{ResponseWriter: w, ct: c.ct}, r)
}

type ctWriter struct {
	http.ResponseWriter
	ct   string
	done bool
}

func (w *ctWriter) WriteHeader(code int) {
	if !w.done {
		w.done = true
		if w.ct == "" {
			w.Header()["Content-Type"] = nil
		} else {
			w.Header().Set("Content-Type", w.ct)
		}
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *ctWriter) Write(b []byte) (int, error) {
	if !w.done {
		w.WriteHeader(http.StatusOK)
	}
	return w.ResponseWriter.Write(b)
}

func (w *ctWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// codecOf is the stack's codec of a format (what the engine counts with).
func (st *recallStack) codecOf(format string) view.Codec {
	switch format {
	case "chat":
		return st.App.Codecs.Chat
	case "messages":
		return st.App.Codecs.Messages
	}
	return st.App.Codecs.Responses
}

// noRecallCall fails when the agent received a condense_recall call.
func noRecallCall(t *testing.T, answer string) {
	t.Helper()
	if strings.Contains(answer, memory.ToolName) {
		t.Fatalf("the agent received a %s call:\n%s", memory.ToolName, clip(answer))
	}
}

func byQuery([]byte) string { return `{"query":"deploy token ticket ZEBRA"}` }

// TestRecallWhateverTheContentType: an answer is recognized by its body,
// not by its Content-Type: text/plain or none, JSON or a stream, in the
// three formats, the recall is answered and the agent never sees the call.
func TestRecallWhateverTheContentType(t *testing.T) {
	for _, ct := range []string{"text/plain; charset=utf-8", ""} {
		for _, format := range formats {
			for _, stream := range []bool{false, true} {
				t.Run(fmt.Sprintf("%q/%s/stream=%v", ct, format, stream), func(t *testing.T) {
					st := newRecallStack(t, recallModel(byQuery, false))
					st.SetUpstream(contentType{http.HandlerFunc(st.route), ct})
					status, answer := st.send(t, format, conversation(format, 40, stream))
					if status != 200 {
						t.Fatalf("status %d: %s", status, clip(answer))
					}
					noRecallCall(t, answer)
					if text := answerText(format, stream, answer); !strings.Contains(text, "FINAL knows ZEBRA-9931") {
						t.Fatalf("the final answer does not hold the fact:\n%s", clip(answer))
					}
					if stream {
						checkStream(t, format, answer)
					}
					if got := st.upstream(format); len(got) != 2 {
						t.Fatalf("upstream got %d requests, want 2 (the request, the recall round)", len(got))
					}
				})
			}
		}
	}
}

// TestRecallChatLegacyFunctionCall: a chat answer that calls the tool as
// the legacy function_call (JSON or streamed) is answered as a tool call;
// the round's request is a valid conversation.
func TestRecallChatLegacyFunctionCall(t *testing.T) {
	for _, stream := range []bool{false, true} {
		t.Run(fmt.Sprintf("stream=%v", stream), func(t *testing.T) {
			st := newRecallStack(t, recallModel(byQuery, false))
			st.chat.legacy = true
			status, answer := st.send(t, "chat", conversation("chat", 40, stream))
			if status != 200 {
				t.Fatalf("status %d: %s", status, clip(answer))
			}
			noRecallCall(t, answer)
			if text := answerText("chat", stream, answer); !strings.Contains(text, "FINAL knows ZEBRA-9931") {
				t.Fatalf("the final answer does not hold the fact:\n%s", clip(answer))
			}
			got := st.upstream("chat")
			if len(got) != 2 {
				t.Fatalf("upstream got %d requests, want 2", len(got))
			}
			for i, g := range got {
				if g.Status != 200 {
					t.Errorf("upstream request %d refused (%d)", i, g.Status)
				}
			}
		})
	}
}

// TestRecallChatSeveralChoices: a request asking for several choices
// does not get the tool (the proxy could continue only one of them), so
// none of the choices the agent gets calls it.
func TestRecallChatSeveralChoices(t *testing.T) {
	st := newRecallStack(t, recallModel(byQuery, false))
	body, _ := sjson.SetBytes(conversation("chat", 40, false), "n", 2)
	status, answer := st.send(t, "chat", body)
	if status != 200 {
		t.Fatalf("status %d: %s", status, clip(answer))
	}
	noRecallCall(t, answer)
	if n := gjson.Get(answer, "choices.#").Int(); n != 2 {
		t.Fatalf("%d choices, want 2: %s", n, clip(answer))
	}
	got := st.upstream("chat")
	if len(got) != 1 || strings.Contains(string(got[0].Body), memory.ToolName) {
		t.Fatalf("upstream got %d requests; the tool in the first: %v", len(got), strings.Contains(string(got[0].Body), memory.ToolName))
	}
}

// manyCalls asks condense_recall n times in one answer (when the request
// carries the tool and its last item is not a recall result), then says
// FINAL.
func manyCalls(n int) model {
	return func(format string, body []byte) fakeupstream.Reply {
		if strings.HasPrefix(lastResult(format, body), memory.ToolName+":") {
			return fakeupstream.Reply{Text: "FINAL answered"}
		}
		if !strings.Contains(string(body), `"`+memory.ToolName+`"`) {
			return fakeupstream.Reply{Text: "FINAL no tool"}
		}
		rep := fakeupstream.Reply{Thinking: "Many.", Text: "Looking everywhere."}
		for i := 0; i < n; i++ {
			rep.Calls = append(rep.Calls, fakeupstream.Call{ID: fmt.Sprintf("call_recall_%d", i), Name: memory.ToolName,
				Input: fmt.Sprintf(`{"query":"deploy token file%d compute"}`, i)})
		}
		return rep
	}
}

// TestRecallCallsPerAnswerBounded: an answer of 200 recall calls gets its
// first 4 answered, the others left out of the round (the last result
// says so), and the round's request fits the model's threshold as the
// engine counts it.
func TestRecallCallsPerAnswerBounded(t *testing.T) {
	for _, format := range formats {
		for _, stream := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/stream=%v", format, stream), func(t *testing.T) {
				st := newRecallStack(t, manyCalls(200))
				status, answer := st.send(t, format, conversation(format, 40, stream))
				if status != 200 {
					t.Fatalf("status %d: %s", status, clip(answer))
				}
				noRecallCall(t, answer)
				if text := answerText(format, stream, answer); !strings.Contains(text, "FINAL answered") {
					t.Fatalf("the agent did not get the final answer:\n%s", clip(answer))
				}
				got := st.upstream(format)
				if len(got) != 2 {
					t.Fatalf("upstream got %d requests, want 2", len(got))
				}
				first, second := string(got[0].Body), string(got[1].Body)
				if got[1].Status != 200 {
					t.Fatalf("the round's request was refused (%d)", got[1].Status)
				}
				n, err := st.Engine.Count(st.codecOf(format), got[1].Body)
				if err != nil || n > trigger {
					t.Errorf("the round's request is %d tokens (%v), over the threshold %d", n, err, trigger)
				}
				if c := strings.Count(second, `call_recall_`) - strings.Count(first, `call_recall_`); c != 2*4 {
					t.Errorf("the round carries %d mentions of recall call ids, want 8 (4 calls, 4 results)", c)
				}
				if !strings.Contains(second, "196 more "+memory.ToolName+" call(s) of this turn were not answered") {
					t.Errorf("no result says that 196 calls were left out: %s", clip(lastResult(format, got[1].Body)))
				}
			})
		}
	}
}

// bigTurn says text of about size(the request's tokens) tokens and calls
// condense_recall once (while the request carries the tool and its last
// item is not a recall result).
func bigTurn(st **recallStack, size func(request int) int) model {
	return func(format string, body []byte) fakeupstream.Reply {
		if strings.HasPrefix(lastResult(format, body), memory.ToolName+":") {
			return fakeupstream.Reply{Text: "FINAL answered"}
		}
		if !strings.Contains(string(body), `"`+memory.ToolName+`"`) {
			return fakeupstream.Reply{Text: "FINAL no tool"}
		}
		n, err := (*st).Engine.Count((*st).codecOf(format), body)
		if err != nil {
			panic(err)
		}
		unit := "Thinking aloud about the deploy script and what it changed. "
		want := size(n)
		k := want / (*st).Counter.Text("", unit)
		for range 3 { // repeated text counts less than its parts
			k = k * want / max((*st).Counter.Text("", strings.Repeat(unit, k)), 1)
		}
		text := strings.Repeat(unit, k)
		return fakeupstream.Reply{Text: text, Calls: []fakeupstream.Call{{ID: "call_recall_1", Name: memory.ToolName, Input: `{"query":"deploy token"}`}}}
	}
}

// TestRecallRoundThatDoesNotFit: when the recalled text would take the
// round's request over the threshold, the call gets a short result saying
// so (the request within the window); when not even that fits the
// window, no round is asked and the agent gets the answer without the
// call, ended (finish_reason stop).
func TestRecallRoundThatDoesNotFit(t *testing.T) {
	for _, stream := range []bool{false, true} {
		t.Run(fmt.Sprintf("short result/stream=%v", stream), func(t *testing.T) {
			var st *recallStack
			// The turn takes the request just over the threshold.
			st = newRecallStack(t, bigTurn(&st, func(n int) int { return trigger - n + 800 }))
			status, answer := st.send(t, "chat", conversation("chat", 40, stream))
			if status != 200 {
				t.Fatalf("status %d: %s", status, clip(answer))
			}
			noRecallCall(t, answer)
			got := st.upstream("chat")
			if len(got) != 2 {
				t.Fatalf("upstream got %d requests, want 2", len(got))
			}
			if r := lastResult("chat", got[1].Body); !strings.Contains(r, "would not fit the model's context window") {
				t.Errorf("the round's result does not say it would not fit: %q", clip(r))
			}
			if n, _ := st.Engine.Count(st.codecOf("chat"), got[1].Body); n > 16000 {
				t.Errorf("the round's request is %d tokens, over the window", n)
			}
			if !strings.Contains(answerText("chat", stream, answer), "FINAL answered") {
				t.Errorf("the agent did not get the final answer:\n%s", clip(answer))
			}
		})
		t.Run(fmt.Sprintf("no round/stream=%v", stream), func(t *testing.T) {
			var st *recallStack
			// The turn alone takes the request over the window.
			st = newRecallStack(t, bigTurn(&st, func(n int) int { return 16000 - n + 2000 }))
			status, answer := st.send(t, "chat", conversation("chat", 40, stream))
			if status != 200 {
				t.Fatalf("status %d: %s", status, clip(answer))
			}
			noRecallCall(t, answer)
			if got := st.upstream("chat"); len(got) != 1 {
				t.Fatalf("upstream got %d requests, want 1 (no round)", len(got))
			}
			if !strings.Contains(answerText("chat", stream, answer), "Thinking aloud") {
				t.Errorf("the agent did not get the model's text")
			}
			if fr := finishReason(stream, answer); fr != "stop" {
				t.Errorf("finish_reason %q, want stop", fr)
			}
		})
	}
}

// finishReason is a chat answer's last finish_reason.
func finishReason(stream bool, answer string) string {
	if !stream {
		return gjson.Get(answer, "choices.0.finish_reason").String()
	}
	fr := ""
	for _, m := range regexp.MustCompile(`(?m)^data: (\{.*)$`).FindAllStringSubmatch(answer, -1) {
		if v := gjson.Get(m[1], "choices.0.finish_reason").String(); v != "" {
			fr = v
		}
	}
	return fr
}

// finalState is how a streamed answer ends: chat's last finish_reason,
// Messages' stop_reason, the function calls of Responses' completed
// output; and the names of the calls the agent received.
func finalState(format, answer string) (state string, calls []string) {
	for _, m := range regexp.MustCompile(`(?m)^data: (\{.*)$`).FindAllStringSubmatch(answer, -1) {
		d := gjson.Parse(m[1])
		switch format {
		case "chat":
			if v := d.Get("choices.0.finish_reason").String(); v != "" {
				state = v
			}
			d.Get("choices.0.delta.tool_calls").ForEach(func(_, tc gjson.Result) bool {
				if n := tc.Get("function.name").String(); n != "" {
					calls = append(calls, n)
				}
				return true
			})
		case "messages":
			if v := d.Get("delta.stop_reason").String(); v != "" {
				state = v
			}
			if d.Get("content_block.type").String() == "tool_use" {
				calls = append(calls, d.Get("content_block.name").String())
			}
		default:
			if d.Get("type").String() == "response.completed" {
				var fc []string
				d.Get("response.output").ForEach(func(_, it gjson.Result) bool {
					if it.Get("type").String() == "function_call" {
						fc = append(fc, it.Get("name").String())
					}
					return true
				})
				state = "completed:" + strings.Join(fc, ",")
			}
			if d.Get("type").String() == "response.output_item.added" && d.Get("item.type").String() == "function_call" {
				calls = append(calls, d.Get("item.name").String())
			}
		}
	}
	return state, calls
}

// TestRecallStreamFinalState: a stream that reaches the round limit ends
// as what the agent received says: no tool call left, the stream ends its
// turn (stop, end_turn, completed with no function call); with the
// agent's own call left, that call, numbered without a gap.
func TestRecallStreamFinalState(t *testing.T) {
	loop := func(withRead bool) model {
		return func(format string, body []byte) fakeupstream.Reply {
			if !strings.Contains(string(body), `"`+memory.ToolName+`"`) {
				return fakeupstream.Reply{Text: "FINAL no tool"}
			}
			rep := fakeupstream.Reply{Thinking: "Again.", Text: "Looking.", Calls: []fakeupstream.Call{{Name: memory.ToolName, Input: `{"query":"deploy token"}`}}}
			if withRead {
				// The recall call first: the agent's call after it is
				// numbered on when the recall call is taken out.
				rep.Calls = append(rep.Calls, fakeupstream.Call{Name: "Read", Input: `{"path":"x.go"}`})
			}
			return rep
		}
	}
	ended := map[string]string{"chat": "stop", "messages": "end_turn", "responses": "completed:"}
	withCall := map[string]string{"chat": "tool_calls", "messages": "tool_use", "responses": "completed:Read"}
	for _, withRead := range []bool{false, true} {
		for _, format := range formats {
			t.Run(fmt.Sprintf("%s/withRead=%v", format, withRead), func(t *testing.T) {
				st := newRecallStack(t, loop(withRead))
				status, answer := st.send(t, format, conversation(format, 40, true))
				if status != 200 {
					t.Fatalf("status %d: %s", status, clip(answer))
				}
				noRecallCall(t, answer)
				checkStream(t, format, answer)
				state, calls := finalState(format, answer)
				want, wantCalls := ended[format], 0
				if withRead {
					want, wantCalls = withCall[format], 1
				}
				if state != want || len(calls) != wantCalls {
					t.Errorf("the stream ends %q with calls %v, want %q with %d call(s)", state, calls, want, wantCalls)
				}
				if format == "chat" && withRead {
					for _, m := range regexp.MustCompile(`(?m)^data: (\{.*)$`).FindAllStringSubmatch(answer, -1) {
						gjson.Get(m[1], "choices.0.delta.tool_calls").ForEach(func(_, tc gjson.Result) bool {
							if i := tc.Get("index").Int(); i != 0 {
								t.Errorf("a delta of the agent's call is numbered %d, want 0: %s", i, tc.Raw)
							}
							return true
						})
					}
				}
			})
		}
	}
}

// TestRecallNotAddedToUnchanged: a request of a conversation condensed
// before, whose head and last step alone are over the window (the last
// call's arguments are huge: nothing condenses them), is forwarded
// unchanged — byte for byte, without the tool.
func TestRecallNotAddedToUnchanged(t *testing.T) {
	huge := strings.Repeat("A rule of the house that the agent must follow at every step, no matter what. ", 1500)
	for _, format := range formats {
		t.Run(format, func(t *testing.T) {
			st := newRecallStack(t, func(string, []byte) fakeupstream.Reply { return fakeupstream.Reply{Text: "ok"} })
			if status, answer := st.send(t, format, conversation(format, 40, false)); status != 200 {
				t.Fatalf("status %d: %s", status, clip(answer))
			}
			if got := st.upstream(format); !strings.Contains(string(got[0].Body), memory.ToolName) {
				t.Fatal("the condensed request does not carry the tool: the test proves nothing")
			}
			// The last step's call, its arguments made huge.
			args := `pkg/file40.go\"}`
			if format == "messages" {
				args = `pkg/file40.go"}`
			}
			body := strings.Replace(string(conversation(format, 41, false)), args, "x"+huge+args, 1)
			req, _ := http.NewRequest("POST", st.Proxy.URL+paths[format], strings.NewReader(body))
			req.Header.Set("Authorization", "Bearer sk-agent")
			req.Header.Set("X-Condense-Mode", "truncate")
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			res.Body.Close()
			if a := res.Header.Get("X-Condense-Applied"); a != "none" {
				t.Fatalf("X-Condense-Applied %q, want none (the request must be one that could not be condensed)", a)
			}
			got := st.upstream(format)
			if last := got[len(got)-1].Body; string(last) != body {
				t.Errorf("forwarded unchanged, but the upstream got %d bytes for %d sent (the tool in it: %v)",
					len(last), len(body), strings.Contains(string(last), memory.ToolName))
			}
		})
	}
}
