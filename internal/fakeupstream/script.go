package fakeupstream

import (
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/tidwall/gjson"
)

// Reply is what the Messages or Responses fake answers to a valid request.
type Reply struct {
	// Thinking is the model's reasoning. Messages: a signed thinking block
	// first, only when the request enables thinking. Responses: a reasoning
	// item first, with this summary, carrying encrypted_content when the
	// request includes "reasoning.encrypted_content".
	Thinking string
	// Text is the answer's text (final, or said before the calls).
	Text string
	// Compaction, if set, makes a Responses answer one compaction item
	// (encrypted_content issued for this text) and nothing else: the
	// answer to a compaction_trigger.
	Compaction string
	// Calls are the tool calls the answer makes.
	Calls []Call
	// Status, if not 0 or 200, makes the fake answer this error status
	// with message Error instead (fault tests).
	Status int
	Error  string
}

// Call is one tool call of a Reply.
type Call struct {
	// ID is the tool_use id (Messages) or call_id (Responses). Empty: one
	// is made up.
	ID   string
	Name string
	// Input is the tool input: a JSON object for Messages tool_use blocks
	// and Responses function calls, free text for custom tool calls.
	Input string
	// Custom makes a Responses custom_tool_call instead of a
	// function_call (ignored by Messages).
	Custom bool
}

// Step is one step of a Script: the tool call the agent is told to make.
type Step struct {
	Name   string // tool name (Claude Code "Read", Codex "exec_command")
	Input  string // JSON arguments (free text for a custom tool)
	Custom bool   // Responses custom tool
	// Text and Thinking go with the call; empty: a short line naming the
	// step.
	Text, Thinking string
}

// Script drives an agent through Steps, one tool call per request, then
// ends with Final — the fakes' "agent driver" mode (set Messages.Answer to
// s.Messages, Responses.Answer to s.Responses).
//
// The step a request is at is read from the conversation: the call ids the
// script issues carry their step number, so the newest tool result of the
// script in the request tells which step was answered last (this survives
// a proxy condensing older steps away). A request whose last message is
// not a tool result of the script although earlier ones are (the agent
// compacting its history, a side question) gets Other, a plain text answer
// that ends with a progress marker ("[script ID at step N]"), as a model's
// summary would tell where the work stands; a request with no tool result
// of the script is at the step of the newest such marker in it (the agent
// resumed from its own summary), or at step 0.
//
// Safe for concurrent use; Steps and the other fields must not change once
// requests arrive.
type Script struct {
	Steps []Step
	// Final is the text of the last answer.
	Final string
	// Other answers requests that are not part of the scripted loop.
	// Default: "Noted."
	Other string
	// ID tags the script's call ids ("toolu_<ID>_007", "call_<ID>_007").
	// Default "step".
	ID string

	mu      sync.Mutex
	answers []int // step answered per request, -1 for Other
}

// StepOf returns the step a request body of the given format ("messages",
// "responses" or "gemini") is at, and whether it is part of the scripted loop (when
// it is not, step is where the loop stands).
func (s *Script) StepOf(format string, body []byte) (step int, inLoop bool) {
	root := gjson.ParseBytes(body)
	var lastID string   // call id of the newest tool result anywhere
	var lastIsOurs bool // the final message/item is a tool result of ours
	var anyOurs bool    // the request holds a tool result of ours
	prefix := s.idPrefix(format)
	if format == "responses" {
		items := root.Get("input").Array()
		for i, it := range items {
			t := it.Get("type").String()
			if t != "function_call_output" && t != "custom_tool_call_output" {
				continue
			}
			id := it.Get("call_id").String()
			if strings.HasPrefix(id, prefix) {
				lastID, anyOurs = id, true
				lastIsOurs = i == len(items)-1
			}
		}
	} else if format == "gemini" {
		contents := root.Get("contents").Array()
		for i, c := range contents {
			c.Get("parts").ForEach(func(_, p gjson.Result) bool {
				if id := p.Get("functionResponse.id").String(); strings.HasPrefix(id, prefix) {
					lastID, anyOurs = id, true
					lastIsOurs = i == len(contents)-1
				}
				return true
			})
		}
	} else {
		msgs := root.Get("messages").Array()
		// Trailing system messages (reminders Claude Code 2.1.197 appends
		// with claude-opus-4-8) do not end the loop: the last message is
		// the one before them.
		n := len(msgs)
		for n > 0 && msgs[n-1].Get("role").String() == "system" {
			n--
		}
		msgs = msgs[:n]
		for i, m := range msgs {
			m.Get("content").ForEach(func(_, b gjson.Result) bool {
				if b.Get("type").String() == "tool_result" {
					if id := b.Get("tool_use_id").String(); strings.HasPrefix(id, prefix) {
						lastID, anyOurs = id, true
						lastIsOurs = i == len(msgs)-1
					}
				}
				return true
			})
		}
	}
	if !anyOurs {
		return s.resumed(body), true
	}
	k, err := strconv.Atoi(strings.TrimPrefix(lastID, prefix))
	if err != nil {
		return 0, false
	}
	return k + 1, lastIsOurs
}

// marker is the progress marker Other answers end with.
func (s *Script) marker(step int) string {
	id := s.ID
	if id == "" {
		id = "step"
	}
	return fmt.Sprintf("[script %s at step %d]", id, step)
}

// resumed returns the step of the newest progress marker in body, or 0.
func (s *Script) resumed(body []byte) int {
	head := strings.TrimSuffix(s.marker(0), "0]")
	b := string(body)
	i := strings.LastIndex(b, head)
	if i < 0 {
		return 0
	}
	rest := b[i+len(head):]
	end := strings.IndexByte(rest, ']')
	if end < 0 {
		return 0
	}
	k, err := strconv.Atoi(rest[:end])
	if err != nil {
		return 0
	}
	return k
}

func (s *Script) idPrefix(format string) string {
	id := s.ID
	if id == "" {
		id = "step"
	}
	if format == "responses" {
		return "call_" + id + "_"
	}
	return "toolu_" + id + "_"
}

// Messages answers a Messages request (use as Messages.Answer).
func (s *Script) Messages(body []byte) Reply { return s.reply("messages", body) }

// Gemini answers a Gemini request (use as Gemini.Answer).
func (s *Script) Gemini(body []byte) Reply { return s.reply("gemini", body) }

// Responses answers a Responses request (use as Responses.Answer).
func (s *Script) Responses(body []byte) Reply { return s.reply("responses", body) }

func (s *Script) reply(format string, body []byte) Reply {
	k, inLoop := s.StepOf(format, body)
	s.mu.Lock()
	if inLoop {
		s.answers = append(s.answers, k)
	} else {
		s.answers = append(s.answers, -1)
	}
	s.mu.Unlock()
	if !inLoop {
		other := s.Other
		if other == "" {
			other = "Noted."
		}
		return Reply{Thinking: "This is not a step of the task.", Text: other + " " + s.marker(k)}
	}
	if k >= len(s.Steps) {
		return Reply{Thinking: "All steps are done; time to report.", Text: s.Final}
	}
	st := s.Steps[k]
	text, thinking := st.Text, st.Thinking
	if text == "" {
		text = fmt.Sprintf("Step %d of %d.", k+1, len(s.Steps))
	}
	if thinking == "" {
		thinking = fmt.Sprintf("Step %d: call %s as planned.", k+1, st.Name)
	}
	return Reply{Thinking: thinking, Text: text, Calls: []Call{{
		ID: fmt.Sprintf("%s%03d", s.idPrefix(format), k), Name: st.Name, Input: st.Input, Custom: st.Custom,
	}}}
}

// Answers returns the step each request was answered with, in order (-1
// for requests outside the loop); len(Steps) marks the final answer.
func (s *Script) Answers() []int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]int(nil), s.answers...)
}

// Finished reports whether the final answer was given.
func (s *Script) Finished() bool {
	for _, a := range s.Answers() {
		if a >= len(s.Steps) {
			return true
		}
	}
	return false
}

// DefaultSummary answers summarizer calls when a fake has no Summarize.
const DefaultSummary = "## Task and intent\n- continue the task (fake summary)\n## Current state and progress\n- work in progress\n## Pending work and next steps\n- keep going"
