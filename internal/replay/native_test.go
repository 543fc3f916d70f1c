package replay_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/condense-proxy/condense-proxy/internal/corpus"
	"github.com/condense-proxy/condense-proxy/internal/fakeupstream"
	"github.com/condense-proxy/condense-proxy/internal/harness"
	"github.com/condense-proxy/condense-proxy/internal/replay"
)

func nativeStack(t *testing.T) (*harness.Stack, replay.Upstream) {
	st := harness.New(harness.Options{Window: 128000})
	t.Cleanup(st.Close)
	up := replay.Upstream{Chat: st.Fake, Messages: &fakeupstream.Messages{Counter: st.Counter}, Responses: &fakeupstream.Responses{Counter: st.Counter},
		Gemini: &fakeupstream.Gemini{Counter: st.Counter, Key: "gk-replay"}}
	st.SetUpstream(fakeupstream.WithGemini(fakeupstream.Mux(st.Fake, up.Messages, up.Responses), up.Gemini))
	return st, up
}

// TestRunNativeMessages replays a Claude Code session in Messages form:
// every request reaches the strict fake, and count_tokens is asked the
// same body.
func TestRunNativeMessages(t *testing.T) {
	st, up := nativeStack(t)
	s, err := corpus.LoadMessages(filepath.Join("..", "..", "testdata", "corpus", "claude-native.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	res, err := replay.RunNative(context.Background(), s.Name, replay.FormatMessages, s, up, st.Counter,
		replay.Options{ProxyURL: st.Proxy.URL, APIKey: "sk-ant-replay", Window: 128000})
	if err != nil {
		t.Fatal(err)
	}
	if res.Rejected != 0 || len(res.Requests) != s.Turns() || res.Format != replay.FormatMessages {
		t.Fatalf("result %s", res.JSON())
	}
	for i, r := range res.Requests {
		if !r.HeadVerbatim || !r.LastVerbatim || r.FwdCounted == 0 || r.CountTokens != r.FwdCounted {
			t.Errorf("request %d: %+v", i, r)
		}
	}
	if res.CountTokensChecked != s.Turns() || res.CountTokensOff != 0 || res.PrefixStability != 1 || res.MaxForwarded == 0 {
		t.Errorf("result %s", res.JSON())
	}
	// What the upstream got: the path's query, Claude Code's headers.
	if got := up.Messages.Received(); len(got) != 0 {
		t.Errorf("%d requests left in the fake's record", len(got))
	}
}

// TestRunNativeResponses replays a session in Responses form.
func TestRunNativeResponses(t *testing.T) {
	st, up := nativeStack(t)
	chat, err := corpus.Load(filepath.Join("..", "..", "testdata", "corpus", "mini.traj.json"))
	if err != nil {
		t.Fatal(err)
	}
	s := corpus.Responses(chat)
	res, err := replay.RunNative(context.Background(), s.Name, replay.FormatResponses, s, up, st.Counter,
		replay.Options{ProxyURL: st.Proxy.URL, APIKey: "sk-replay", Window: 128000})
	if err != nil {
		t.Fatal(err)
	}
	if res.Rejected != 0 || len(res.Requests) != s.Turns() || res.CountTokensChecked != 0 {
		t.Fatalf("result %s", res.JSON())
	}
	for i, r := range res.Requests {
		if !r.HeadVerbatim || !r.LastVerbatim || r.FwdCounted == 0 || r.Messages != s.Items(i) {
			t.Errorf("request %d: %+v", i, r)
		}
	}
	if _, err := replay.RunNative(context.Background(), "x", replay.FormatMessages, s, replay.Upstream{}, st.Counter, replay.Options{}); err == nil {
		t.Error("a Messages replay without a Messages fake ran")
	}
}

// TestRunNativeGemini replays a session in Gemini form: every request
// reaches the strict Gemini fake at the model's streamed method, with
// Gemini CLI's key header, head and last content verbatim.
func TestRunNativeGemini(t *testing.T) {
	st, up := nativeStack(t)
	chat, err := corpus.Load(filepath.Join("..", "..", "testdata", "corpus", "mini.traj.json"))
	if err != nil {
		t.Fatal(err)
	}
	s := corpus.Gemini(chat)
	s.Model = "gemini-3-flash-preview"
	res, err := replay.RunNative(context.Background(), s.Name, replay.FormatGemini, s, up, st.Counter,
		replay.Options{ProxyURL: st.Proxy.URL, APIKey: "gk-replay", Window: 128000})
	if err != nil {
		t.Fatal(err)
	}
	if res.Rejected != 0 || len(res.Requests) != s.Turns() || res.Format != replay.FormatGemini || s.Turns() < 3 {
		t.Fatalf("result %s", res.JSON())
	}
	for i, r := range res.Requests {
		if !r.HeadVerbatim || !r.LastVerbatim || r.FwdCounted == 0 || r.Messages != s.Contents(i) || r.Status != 200 {
			t.Errorf("request %d: %+v", i, r)
		}
	}
	if res.PrefixStability != 1 || res.MaxForwarded == 0 {
		t.Errorf("result %s", res.JSON())
	}
	if got := up.Gemini.Received(); len(got) != 0 {
		t.Errorf("%d requests left in the fake's record", len(got))
	}
	if _, err := replay.RunNative(context.Background(), "x", replay.FormatGemini, s, replay.Upstream{}, st.Counter, replay.Options{}); err == nil {
		t.Error("a Gemini replay without a Gemini fake ran")
	}
}
