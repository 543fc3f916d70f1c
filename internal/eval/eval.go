// Package eval replays agent sessions through an in-process condense-proxy
// in several modes and reports what a user choosing a context proxy asks:
// does it break my agent (rejected requests, requests over the window,
// head or last message lost), how much does it save (tokens sent,
// forwarded, spent on summaries), and what does my agent still know
// afterwards (facts kept, prefix stability).
//
// cmd/condense-eval is the command-line front; the CI runs a short
// version through the tests of this package.
package eval

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/condense-proxy/condense-proxy/config"
	"github.com/condense-proxy/condense-proxy/internal/corpus"
	"github.com/condense-proxy/condense-proxy/internal/fakeupstream"
	"github.com/condense-proxy/condense-proxy/internal/harness"
	"github.com/condense-proxy/condense-proxy/internal/replay"
	"github.com/condense-proxy/condense-proxy/tokenizer"
)

// Mode is one way of running the proxy.
type Mode struct {
	Name       string // as reported
	Header     string // X-Condense-Mode
	Summarizer string // llm (canned answers) or extractive
	// Configure, if set, sets the mode's configuration keys
	// (selective.eager, memory.relevant_context…).
	Configure func(*config.Config) `json:"-"`
}

// Modes are the modes evaluated by default.
var Modes = []Mode{
	{Name: "off", Header: "off", Summarizer: "extractive"},
	{Name: "full-extractive", Header: "full", Summarizer: "extractive"},
	{Name: "full-llm", Header: "full", Summarizer: "llm"},
	{Name: "selective", Header: "selective", Summarizer: "llm"},
	{Name: "auto", Header: "auto", Summarizer: "llm"},
}

// Source is one session to replay.
type Source struct {
	// Spec is a file path or "synthetic:SEED:CHARS".
	Spec   string
	Window int
	// Format is the wire format the session is replayed in: "" or "chat"
	// (chat completions), "messages" (Claude Code sessions in their native
	// Anthropic Messages form), "responses" (any session converted to
	// OpenAI Responses items, as Codex sends them), "gemini" (any session
	// converted to Gemini contents, as Gemini CLI sends them).
	Format string
	// Length is the session's length in windows, when the suite chose it
	// (the bill suite's goals depend on it); 0: not set.
	Length float64
	// Modes, when set, names the only modes (of Config.Modes) this source
	// is replayed in.
	Modes []string
}

// Config configures Run.
type Config struct {
	Sources   []Source
	Modes     []Mode
	Threshold float64 // default 0.8
	Target    float64 // default 0.5
	// Model, if set, is the model entry of the replays (its prompt-cache
	// prices are what the planner plans with); nil: the harness's. The
	// Gemini form's replays take its window and encoding, and the
	// registry's prices for the model they name (geminiModel).
	Model *config.ModelConfig
	// SummaryTokens pads the fake's canned summaries to about this many
	// tokens (0: the short canned text).
	SummaryTokens int
	// FaithfulSummaries: the fake's summaries keep the facts of what they
	// summarize (harness.FaithfulSummaryOf), as the built-in prompt asks
	// a model to.
	FaithfulSummaries bool
	// Every replays every n-th request only (1: all).
	Every int
	// Log receives one line per session and mode; nil: none.
	Log func(format string, args ...any)
	// ProxyLog, when set, receives the proxy's own log (a line per
	// request, with what was applied and why); nil: discarded.
	ProxyLog *slog.Logger
	// ColdModes names the modes whose chat replays also run the
	// cold-turn arm (cold.go): replayed again with the engine's clock
	// moved by the idle gaps. Nil: auto only; empty: none.
	ColdModes []string
	// Replicas, above 1, replays each session through that many proxies
	// that share only the cache, the requests handed to them in turn (a
	// round-robin balancer): harness.Options.Replicas.
	Replicas int
	// Redis, if set, is the cache the replicas share (a Redis URL), each
	// with its own memory layer in front, as deployed; "": one memory
	// cache. Each replay then calls with a key of its own, so that no
	// two replays share a conversation's records.
	Redis string
}

// Row is one session replayed in one mode.
type Row struct {
	Session          string  `json:"session"`
	Format           string  `json:"format"`
	Length           float64 `json:"length,omitempty"` // in windows, when the suite set it
	Mode             string  `json:"mode"`
	Window           int     `json:"window"`
	Requests         int     `json:"requests"`
	Condensed        int     `json:"condensed"`
	Rejected         int     `json:"rejected"`
	MaxForwarded     int     `json:"max_forwarded"`
	HeadLost         int     `json:"head_lost"`
	LastLost         int     `json:"last_lost"`
	OverWindow       int     `json:"over_window"`
	TokensSent       int     `json:"tokens_sent"`
	TokensForwarded  int     `json:"tokens_forwarded"`
	SummarizerTokens int     `json:"summarizer_tokens"`
	Saved            float64 `json:"saved"` // 1 - (forwarded + summarizer) / sent
	SummarizerCalls  int     `json:"summarizer_calls"`
	CacheHitRate     float64 `json:"cache_hit_rate"` // over requests that used summaries; -1: none
	PrefixStability  float64 `json:"prefix_stability"`
	FactsSeen        int     `json:"facts_seen"` // over all condensed requests
	FactsKept        int     `json:"facts_kept"`
	// Over the requests condensed selectively only (a sliding window
	// drops whole messages by design).
	SelectiveFactsSeen int `json:"selective_facts_seen"`
	SelectiveFactsKept int `json:"selective_facts_kept"`
	// FactsByKind splits facts_seen and facts_kept by kind (real
	// sessions: task, error, path; generated ones: task, failing-test,
	// error, edited-path, decision), with each kind's recall probes. A
	// real session's decisions (the first sentence of an assistant message
	// that edits a file) are counted here only, not in facts_seen and
	// facts_kept.
	FactsByKind map[string]replay.FactCount `json:"facts_by_kind,omitempty"`
	// Recall probes: of the distinct facts condensed away (every kind,
	// decisions included), those searched
	// for in the conversation's memory as the recall tool searches it
	// (the query: the fact's first words), and those for which a step
	// holding the fact was among the best 3 results.
	RecallProbes int     `json:"recall_probes"`
	RecallTop3   int     `json:"recall_top3"`
	LatencyP50Ms float64 `json:"latency_p50_ms"`
	LatencyP99Ms float64 `json:"latency_p99_ms"`
	AddedP50Ms   float64 `json:"added_p50_ms"` // versus mode off on the same session
	Sent         []int   `json:"sent_series"`
	Forwarded    []int   `json:"forwarded_series"`
	// The prompt-cache view: the share of forwarded tokens a provider's
	// cache serves (the prefix identical to the previous request, at least
	// 1024 tokens), and the bill under each Pricing as a ratio to mode off
	// on the same session (-1: no off row), summarizer included.
	CachedShare   float64 `json:"cached_share"`
	BillAnthropic float64 `json:"bill_anthropic"`
	BillOpenAI    float64 `json:"bill_openai"`
	// BillSmallSummarizer: Anthropic-style with the summarizer priced as
	// a small summary_model (Pricings[2]).
	BillSmallSummarizer float64 `json:"bill_small_summarizer"`
	// BillGPT56: OpenAI's prices from GPT-5.6 on (Pricings[3]).
	BillGPT56 float64 `json:"bill_gpt56"`
	// BillGemini: Gemini-style (Pricings[4]), the bill of record of the
	// Gemini form (Row.Bill).
	BillGemini float64   `json:"bill_gemini"`
	BillSeries []float64 `json:"bill_series"` // Anthropic-style bill of each request, summarizer calls excluded
	// The Anthropic-style bill in parts, as ratios to mode off's whole
	// bill: cache reads, fresh (written) input, the summarizer.
	BillReads      float64 `json:"bill_reads"`
	BillWrites     float64 `json:"bill_writes"`
	BillSummarizer float64 `json:"bill_summarizer"`
	// ForwardedAvg is the average forwarded request, tokens.
	ForwardedAvg  int `json:"forwarded_avg"`
	SummarizerOut int `json:"summarizer_tokens_out"`
	// SummarizerCached is the part of SummarizerTokens a provider would
	// read from its cache (summaries asked in place).
	SummarizerCached int `json:"summarizer_tokens_cached"`
	// Keep-alive over idle gaps (keepalive.go), chat replays only:
	// the gaps drawn before requests that follow a turn-ending answer,
	// and keep-alive's net saving as a share of the Anthropic-style bill
	// with those gaps (-1: not estimated).
	IdleGaps        int     `json:"idle_gaps"`
	KeepAliveSaving float64 `json:"keepalive_saving"`
	// Cold turns over idle gaps (cold.go), chat replays in mode off and
	// the modes of Config.ColdModes: ColdIdleGaps is the gaps drawn
	// (before every request that carries a user message after the
	// agent's last step), ColdGaps those longer than the cache's lifetime
	// (the request after each writes its whole prompt). The session is
	// replayed twice more, the engine's clock moved by the gaps: BillIdle
	// is the Anthropic-style bill with the gaps of the replay with cold
	// turns off (condense.cold_turns: false), BillCold of the one with
	// them on, both as ratios to mode off's bill with the gaps (-1: not
	// replayed); IdleFacts* are the facts of the first, ColdFacts* of the
	// second (as FactsSeen, FactsKept and FactsByKind are this replay's),
	// ColdTurns the requests it condensed cold.
	ColdIdleGaps    int                         `json:"cold_idle_gaps"`
	ColdGaps        int                         `json:"cold_gaps"`
	BillIdle        float64                     `json:"bill_idle"`
	BillCold        float64                     `json:"bill_cold"`
	ColdTurns       int                         `json:"cold_turns"`
	IdleFactsSeen   int                         `json:"idle_facts_seen"`
	IdleFactsKept   int                         `json:"idle_facts_kept"`
	IdleFactsByKind map[string]replay.FactCount `json:"idle_facts_by_kind,omitempty"`
	ColdFactsSeen   int                         `json:"cold_facts_seen"`
	ColdFactsKept   int                         `json:"cold_facts_kept"`
	ColdFactsByKind map[string]replay.FactCount `json:"cold_facts_by_kind,omitempty"`

	billAnthropic, billOpenAI, billSmall, billGPT56, billGemini float64 // absolute, for the ratios
	reads, writes, sumBill                                      float64 // absolute parts of billAnthropic
	billIdle, billCold                                          float64 // absolute; billCold -1: not replayed
}

// Report is the outcome of Run.
type Report struct {
	Threshold float64 `json:"threshold"`
	// SummaryTokens is the size of the fake summarizer's summaries (0: a
	// short canned text).
	SummaryTokens int      `json:"summary_tokens"`
	Rows          []Row    `json:"rows"`
	Skipped       []string `json:"skipped,omitempty"` // files that could not be read, with the reason
	Generated     string   `json:"generated"`
	// BillSuite, when set, is the bill suite's report (condense-eval
	// --suite all), rendered as a section of its own.
	BillSuite *Report `json:"bill_suite,omitempty"`
	// Command is what produced the bill suite (for its section).
	Command string `json:"command,omitempty"`
}

// load reads a Source.
func load(src Source) (*corpus.Session, []corpus.Fact, error) {
	if rest, ok := strings.CutPrefix(src.Spec, "synthetic:"); ok {
		parts := strings.Split(rest, ":")
		var seed int64
		chars := 0
		var err1, err2 error
		if len(parts) >= 2 {
			seed, err1 = strconv.ParseInt(parts[0], 10, 64)
			chars, err2 = strconv.Atoi(parts[1])
		}
		if len(parts) < 2 || len(parts) > 3 || err1 != nil || err2 != nil || chars <= 0 || (len(parts) == 3 && parts[2] != "reasoning") {
			return nil, nil, fmt.Errorf("%s: want synthetic:SEED:CHARS or synthetic:SEED:CHARS:reasoning", src.Spec)
		}
		s, facts := corpus.Synthetic(seed, chars)
		if len(parts) == 3 {
			s = corpus.WithReasoning(s, seed)
		}
		return s, facts, nil
	}
	s, err := corpus.Load(src.Spec)
	if err != nil {
		return nil, nil, err
	}
	return s, corpus.DetectFacts(s), nil
}

// kindFacts are the facts of a session reported by kind only, apart
// from the facts column's total: a real session's decisions
// (corpus.DetectDecisions), which the total did not count before them.
func kindFacts(src Source, s *corpus.Session) []corpus.Fact {
	if strings.HasPrefix(src.Spec, "synthetic:") {
		return nil // the planted decisions are among the facts
	}
	return corpus.DetectDecisions(s)
}

// Run replays every source in every mode. Unreadable sources are reported
// in Skipped and the rest still run.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	if cfg.Threshold <= 0 {
		cfg.Threshold = 0.8
	}
	if len(cfg.Modes) == 0 {
		cfg.Modes = Modes
	}
	if cfg.Every <= 0 {
		cfg.Every = 1
	}
	logf := cfg.Log
	if logf == nil {
		logf = func(string, ...any) {}
	}
	coldModes := cfg.ColdModes
	if coldModes == nil {
		coldModes = []string{"auto"}
	}
	rep := &Report{Threshold: cfg.Threshold, SummaryTokens: cfg.SummaryTokens, Generated: time.Now().UTC().Format("2006-01-02")}
	counter := tokenizer.New(tokenizer.Options{})
	replays := 0 // with Redis: each replay calls with a key of its own
	for _, src := range cfg.Sources {
		sess, facts, err := load(src)
		if err != nil {
			rep.Skipped = append(rep.Skipped, err.Error())
			logf("skipped: %v", err)
			continue
		}
		var native replay.NativeSession
		switch src.Format {
		case "", "chat":
		case replay.FormatMessages:
			var ms *corpus.MessagesSession
			if strings.HasPrefix(src.Spec, "synthetic:") {
				ms, err = corpus.ClaudeMessages(corpus.ClaudeLog(sess))
				if ms != nil {
					ms.Name = sess.Name
				}
			} else {
				ms, err = corpus.LoadMessages(src.Spec)
			}
			if err != nil {
				rep.Skipped = append(rep.Skipped, err.Error())
				logf("skipped: %v", err)
				continue
			}
			native = ms
		case replay.FormatResponses:
			native = corpus.Responses(sess)
		case replay.FormatGemini:
			native = corpus.Gemini(sess)
		default:
			return rep, fmt.Errorf("%s: unknown format %q", src.Spec, src.Format)
		}
		var offP50 float64 = -1
		for _, m := range cfg.Modes {
			if err := ctx.Err(); err != nil {
				return rep, err
			}
			if len(src.Modes) > 0 && !slices.Contains(src.Modes, m.Name) {
				continue
			}
			model := cfg.Model
			if src.Format == replay.FormatGemini {
				model = geminiModel(cfg.Model)
			}
			// replayOnce replays the session through a stack of its own
			// whose engine reads now (nil: the wall clock), before, if
			// set, called before each request.
			replayOnce := func(now func() time.Time, before func(int), configure func(*config.Config)) (*replay.Result, error) {
				conv := &conversationOf{}
				key := "sk-eval"
				if cfg.Redis != "" {
					replays++
					key = fmt.Sprintf("sk-eval-%d-%d", time.Now().UnixNano(), replays)
					configure = withRedis(configure, cfg.Redis)
				}
				st := harness.New(harness.Options{Window: src.Window, Threshold: cfg.Threshold, Target: cfg.Target, Summarizer: m.Summarizer,
					Counter: counter, Model: model, Configure: configure, SummaryTokens: cfg.SummaryTokens, FaithfulSummaries: cfg.FaithfulSummaries,
					Logger: cfg.ProxyLog, FeedMemory: true, Recorder: conv, Now: now, Replicas: cfg.Replicas})
				defer st.Close()
				opts := replay.Options{
					ProxyURL: st.Proxy.URL, Model: "gpt-4o", Mode: m.Header, APIKey: key, Window: src.Window,
					Every: cfg.Every, Facts: facts, KindFacts: kindFacts(src, sess), Drain: st.Drain, DrainEach: true, Recall: recallProbe(st.App.Memory, conv),
					Before: before,
				}
				if native == nil {
					return replay.Run(ctx, sess, st.Fake, counter, opts)
				}
				up := replay.Upstream{Chat: st.Fake, Messages: &fakeupstream.Messages{Counter: counter}, Responses: &fakeupstream.Responses{Counter: counter},
					Gemini: &fakeupstream.Gemini{Counter: counter}}
				var summarize func([]byte) (int, string)
				if cfg.SummaryTokens > 0 {
					summarize = harness.CannedSummaryOf(cfg.SummaryTokens)
				}
				if cfg.FaithfulSummaries {
					summarize = harness.FaithfulSummaryOf(cmp.Or(cfg.SummaryTokens, 1000))
				}
				up.Messages.Summarize, up.Responses.Summarize, up.Gemini.Summarize = summarize, summarize, summarize
				st.SetUpstream(fakeupstream.WithGemini(fakeupstream.Mux(st.Fake, up.Messages, up.Responses), up.Gemini))
				return replay.RunNative(ctx, sess.Name+" ["+src.Format+"]", src.Format, native, up, counter, opts)
			}
			res, err := replayOnce(nil, nil, m.Configure)
			if err != nil {
				return rep, fmt.Errorf("%s in mode %s: %w", sess.Name, m.Name, err)
			}
			row := summarize(res, m.Name, src.Window)
			row.KeepAliveSaving, row.billIdle, row.billCold = -1, -1, -1
			if native == nil {
				keepAliveRow(&row, res, sess, cfg.Every)
				gaps := idleGaps(sess, cfg.Every)
				if m.Name == "off" {
					idleRow(&row, res, gaps)
				} else if slices.Contains(coldModes, m.Name) {
					// The two arms over the gaps, the engine's clock moved
					// by them: cold turns off, then on.
					arm := func(cold bool) (*replay.Result, error) {
						clock := newReplayClock(gaps)
						return replayOnce(clock.Now, clock.before, func(c *config.Config) {
							if m.Configure != nil {
								m.Configure(c)
							}
							c.Condense.ColdTurns = cold
						})
					}
					without, err := arm(false)
					if err != nil {
						return rep, fmt.Errorf("%s in mode %s over idle gaps: %w", sess.Name, m.Name, err)
					}
					with, err := arm(true)
					if err != nil {
						return rep, fmt.Errorf("%s in mode %s over idle gaps, cold turns: %w", sess.Name, m.Name, err)
					}
					idleRow(&row, without, gaps)
					coldArm(&row, with, gaps)
				}
			}
			row.Format = src.Format
			row.Length = src.Length
			if row.Format == "" {
				row.Format = "chat"
			}
			if m.Name == "off" {
				offP50 = row.LatencyP50Ms
			}
			if offP50 >= 0 {
				row.AddedP50Ms = row.LatencyP50Ms - offP50
			}
			rep.Rows = append(rep.Rows, row)
			billRows(rep.Rows)
			row = rep.Rows[len(rep.Rows)-1]
			logf("%s %s: %d requests, %d condensed, saved %.0f%%, rejected %d, prefix %.3f, bill %.2f", row.Session, row.Mode, row.Requests, row.Condensed, 100*row.Saved, row.Rejected, row.PrefixStability, row.Bill())
		}
	}
	return rep, nil
}

// withRedis is configure, then the cache in Redis at url.
func withRedis(configure func(*config.Config), url string) func(*config.Config) {
	return func(c *config.Config) {
		if configure != nil {
			configure(c)
		}
		c.RedisURL = url
	}
}

// geminiModel is m for the Gemini form's replays: its window, encoding and
// safety factor, and no prompt-cache prices of its own, so that the
// registry prices the model their path names (corpus.GeminiModel) as its
// Gemini family (implicit cache reads at 0.1, writes at the input price,
// prefixes from 1024 or 4096 tokens). Nil stays nil: the harness's entry
// has no prices either.
func geminiModel(m *config.ModelConfig) *config.ModelConfig {
	if m == nil {
		return nil
	}
	g := *m
	g.CacheRead, g.CacheWrite, g.CacheTTL, g.MinCachedPrefix, g.InputPricePerMTok = 0, 0, 0, 0, 0
	return &g
}

func summarize(res *replay.Result, mode string, window int) Row {
	row := Row{Session: res.Session, Mode: mode, Window: window, Requests: len(res.Requests), Rejected: res.Rejected,
		MaxForwarded: res.MaxForwarded, TokensSent: res.SentTokens, TokensForwarded: res.ForwardedTokens,
		SummarizerTokens: res.SummarizerTokensIn, SummarizerCalls: res.SummarizerCalls, SummarizerOut: res.SummarizerTokensOut, SummarizerCached: res.SummarizerTokensCached,
		PrefixStability: res.PrefixStability, FactsSeen: res.FactsSeen, FactsKept: res.FactsKept, CacheHitRate: -1,
		FactsByKind: res.FactsByKind, RecallProbes: res.RecallProbes, RecallTop3: res.RecallTop3}
	sel := res.FactsByApplied["selective"]
	row.SelectiveFactsSeen, row.SelectiveFactsKept = sel[0], sel[1]
	var lat []float64
	hits, used := 0.0, 0
	cached, fwd := 0, 0
	for _, r := range res.Requests {
		if r.Applied != "" && r.Applied != "none" {
			row.Condensed++
		}
		if !r.HeadVerbatim {
			row.HeadLost++
		}
		if !r.LastVerbatim {
			row.LastLost++
		}
		if r.FwdCounted > window {
			row.OverWindow++
		}
		switch r.Cache {
		case "hit":
			hits++
			used++
		case "partial":
			hits += 0.5
			used++
		case "miss":
			used++
		}
		lat = append(lat, float64(r.Latency.Microseconds())/1000)
		row.Sent = append(row.Sent, r.TokensSent)
		row.Forwarded = append(row.Forwarded, r.FwdCounted)
		bill := Pricings[0].requestBill(r.FwdCounted, r.CachedTokens)
		c := cachedPart(min(r.CachedTokens, r.FwdCounted))
		row.reads += Pricings[0].Cached * float64(c)
		row.writes += Pricings[0].Fresh * float64(r.FwdCounted-c)
		row.BillSeries = append(row.BillSeries, bill)
		row.billAnthropic += bill
		row.billOpenAI += Pricings[1].requestBill(r.FwdCounted, r.CachedTokens)
		row.billSmall += Pricings[2].requestBill(r.FwdCounted, r.CachedTokens)
		row.billGPT56 += Pricings[3].requestBill(r.FwdCounted, r.CachedTokens)
		row.billGemini += Pricings[4].requestBill(r.FwdCounted, r.CachedTokens)
		cached += cachedPart(min(r.CachedTokens, r.FwdCounted))
		fwd += r.FwdCounted
	}
	for i, p := range Pricings {
		sum := summarizerBill(res, p)
		switch i {
		case 0:
			row.billAnthropic += sum
			row.sumBill = sum
		case 1:
			row.billOpenAI += sum
		case 2:
			row.billSmall += sum
		case 3:
			row.billGPT56 += sum
		case 4:
			row.billGemini += sum
		}
	}
	if fwd > 0 {
		row.CachedShare = float64(cached) / float64(fwd)
	}
	if len(res.Requests) > 0 {
		row.ForwardedAvg = fwd / len(res.Requests)
	}
	if used > 0 {
		row.CacheHitRate = hits / float64(used)
	}
	if row.TokensSent > 0 {
		row.Saved = 1 - float64(row.TokensForwarded+row.SummarizerTokens)/float64(row.TokensSent)
	}
	sort.Float64s(lat)
	if len(lat) > 0 {
		row.LatencyP50Ms = lat[len(lat)/2]
		row.LatencyP99Ms = lat[min(len(lat)-1, len(lat)*99/100)]
	}
	return row
}

// summarizerBill is what res's summarizer calls cost under p. A call asked
// in place reads what the provider cached of the conversation at the
// cached price, and writes the rest.
func summarizerBill(res *replay.Result, p Pricing) float64 {
	plain := res.SummarizerTokensIn - res.SummarizerTokensCached - res.SummarizerTokensInPlace
	return p.SummaryIn*float64(plain) + p.Cached*float64(res.SummarizerTokensCached) +
		max(p.SummaryIn, p.Fresh)*float64(res.SummarizerTokensInPlace) + p.SummaryOut*float64(res.SummarizerTokensOut)
}

// Check returns the failures the CI gate cares about: any rejected
// request, any lost head or last message, any request over the window, and
// selective condensing keeping fewer than minFacts of the facts in play,
// over the whole report (single sessions hold too few facts to judge alone).
func (r *Report) Check(minFacts float64) []string {
	var out []string
	seen, kept := 0, 0
	for _, row := range r.Rows {
		seen += row.SelectiveFactsSeen
		kept += row.SelectiveFactsKept
		id := row.Session + " " + row.Mode
		if row.Rejected > 0 {
			out = append(out, fmt.Sprintf("%s: %d requests rejected by the upstream", id, row.Rejected))
		}
		if row.HeadLost > 0 || row.LastLost > 0 {
			out = append(out, fmt.Sprintf("%s: head lost in %d requests, last message in %d", id, row.HeadLost, row.LastLost))
		}
		if row.OverWindow > 0 && row.Mode != "off" {
			out = append(out, fmt.Sprintf("%s: %d forwarded requests over the %d-token window", id, row.OverWindow, row.Window))
		}
	}
	if seen > 0 && float64(kept) < minFacts*float64(seen) {
		out = append(out, fmt.Sprintf("selectively condensed requests kept %d of %d facts (< %.0f%%)", kept, seen, 100*minFacts))
	}
	for _, s := range r.Skipped {
		out = append(out, "skipped: "+s)
	}
	return out
}

// JSON renders the report.
func (r *Report) JSON() []byte {
	b, _ := json.MarshalIndent(r, "", "  ")
	return b
}

// BillModes are the modes of the bill suite: off, and full, selective and
// auto with LLM summaries; selective with selective.eager; auto with the
// relevant-context block and with notes for stand-ins.
var BillModes = []Mode{
	{Name: "off", Header: "off", Summarizer: "extractive"},
	{Name: "full", Header: "full", Summarizer: "llm"},
	{Name: "selective", Header: "selective", Summarizer: "llm"},
	{Name: "auto", Header: "auto", Summarizer: "llm"},
	{Name: "selective-eager", Header: "selective", Summarizer: "llm", Configure: func(c *config.Config) { c.Selective.Eager = true }},
	{Name: "auto-relevant", Header: "auto", Summarizer: "llm", Configure: func(c *config.Config) { c.Memory.RelevantContext = true }},
	{Name: "auto-notes", Header: "auto", Summarizer: "llm", Configure: func(c *config.Config) { c.Condense.StandIns = "notes" }},
}
