// Command condense-eval replays agent sessions through an in-process
// condense-proxy in every mode and writes a Markdown report, a JSON file
// and one SVG chart per session: into a new folder it prints (or --dir),
// or, with -update, over the repository's EVALUATION.md, eval/results.json
// and eval/*.svg.
//
//	condense-eval [flags] [SESSION ...]
//
// A SESSION is a session file (*.traj.json, *.traj, *.jsonl), a folder of
// them, or synthetic:SEED:CHARS. With none, the default suite runs: every
// session of ../shared/corpus/raw at --corpus-window, in chat form and
// converted to the Messages (Claude Code's sessions), Responses and Gemini
// forms, and two long synthetic sessions at --window.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/condense-proxy/condense-proxy/config"
	"github.com/condense-proxy/condense-proxy/internal/corpus"
	"github.com/condense-proxy/condense-proxy/internal/eval"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "condense-eval:", err)
		os.Exit(1)
	}
}

// billSuite sets cfg to the bill suite: the sessions users meet (1–3× the
// window, and 10×), threshold 0.75 and target 0.5 unless the flags say
// otherwise, the model priced Anthropic-style (cache reads 0.1, writes
// 1.25) so the planner plans for the bill measured, summaries of about
// 1,000 tokens.
func billSuite(cfg *eval.Config, window int, lengths, reasoningLengths, relevantLengths, formats, seeds, reasoningSeeds string) error {
	if cfg.Threshold == 0.8 {
		cfg.Threshold = 0.75
	}
	cfg.Model = &config.ModelConfig{ContextWindow: window, Encoding: "o200k_base", SafetyFactor: 1, CacheRead: 0.1, CacheWrite: 1.25, CacheTTL: 5 * time.Minute}
	cfg.SummaryTokens = 1000
	cfg.FaithfulSummaries = true
	if len(cfg.Modes) == 0 {
		cfg.Modes = eval.BillModes
	}
	// About 3.2 characters a token in the synthetic sessions.
	chars := func(x float64) int { return int(x * float64(window) * 3.2) }
	for _, format := range strings.Split(formats, ",") {
		switch format {
		case "chat":
			for _, l := range strings.Split(lengths, ",") {
				x, err := strconv.ParseFloat(l, 64)
				if err != nil || x <= 0 {
					return fmt.Errorf("--lengths: %q is not a positive number", l)
				}
				// The opt-in modes where their goals are set: eager at
				// 2.5×, the relevant-context block at 10× (where auto's
				// summaries have dropped facts it could bring back;
				// --relevant-lengths).
				modes := []string{"off", "full", "selective", "auto"}
				if x == 2.5 {
					modes = append(modes, "selective-eager")
				}
				for _, r := range strings.Split(relevantLengths, ",") {
					if y, err := strconv.ParseFloat(r, 64); err != nil || y <= 0 {
						return fmt.Errorf("--relevant-lengths: %q is not a positive number", r)
					} else if y == x {
						modes = append(modes, "auto-relevant")
					}
				}
				for _, seed := range strings.Split(seeds, ",") {
					if n, err := strconv.Atoi(seed); err != nil || n <= 0 {
						return fmt.Errorf("--seeds: %q is not a positive integer", seed)
					}
					cfg.Sources = append(cfg.Sources, eval.Source{Spec: fmt.Sprintf("synthetic:%s:%d", seed, chars(x)), Window: window, Length: x, Modes: modes})
				}
			}
		case "messages", "responses", "gemini":
			for _, l := range strings.Split(reasoningLengths, ",") {
				x, err := strconv.ParseFloat(l, 64)
				if err != nil || x <= 0 {
					return fmt.Errorf("--reasoning-lengths: %q is not a positive number", l)
				}
				for _, seed := range strings.Split(reasoningSeeds, ",") {
					if n, err := strconv.Atoi(seed); err != nil || n <= 0 {
						return fmt.Errorf("--reasoning-seeds: %q is not a positive integer", seed)
					}
					cfg.Sources = append(cfg.Sources, eval.Source{Spec: fmt.Sprintf("synthetic:%s:%d:reasoning", seed, chars(x)), Window: window, Format: format, Length: x,
						Modes: []string{"off", "full", "selective", "auto"}})
				}
			}
		default:
			return fmt.Errorf("--formats: unknown format %q", format)
		}
	}
	return nil
}

// corpusFormats are the forms the default suite replays the corpus in:
// chat completions, Claude Code's native Messages form (its own sessions
// only), Responses (as Codex sends) and Gemini (as Gemini CLI sends).
var corpusFormats = []string{"chat", "messages", "responses", "gemini"}

// defaultSources is the default suite: each corpus session (files) in
// each of corpusFormats at corpusWindow, then two long synthetic sessions
// (content about 8× a 128k window) at window.
func defaultSources(files []string, corpusWindow, window int) []eval.Source {
	var out []eval.Source
	for _, format := range corpusFormats {
		for _, f := range files {
			if format == "messages" && !strings.HasSuffix(f, ".jsonl") {
				continue
			}
			out = append(out, eval.Source{Spec: f, Window: corpusWindow, Format: format})
		}
	}
	for _, s := range []string{"synthetic:1:4000000", "synthetic:2:4000000"} {
		out = append(out, eval.Source{Spec: s, Window: window})
	}
	return out
}

func run(ctx context.Context, args []string, stderr io.Writer) error {
	fs := flag.NewFlagSet("condense-eval", flag.ContinueOnError)
	fs.SetOutput(stderr)
	window := fs.Int("window", 128000, "context window for synthetic sessions and for sessions given as arguments")
	corpusWindow := fs.Int("corpus-window", 32000, "context window for the default suite's corpus sessions")
	corpusDir := fs.String("corpus", filepath.Join("..", "shared", "corpus", "raw"), "corpus folder of the default suite")
	threshold := fs.Float64("threshold", 0.8, "fraction of the window that triggers condensing")
	target := fs.Float64("target", 0, "fraction of the window condensing aims for (0: 0.5, or 5/8 of the threshold when that is not above 0.5)")
	modes := fs.String("modes", "", "comma-separated modes (default: off,full-extractive,full-llm,selective,auto)")
	every := fs.Int("every", 1, "replay every n-th request only")
	update := fs.Bool("update", false, "regenerate the repository's report: write EVALUATION.md, eval/results.json and the charts in eval/ (run from the repository's root)")
	outDir := fs.String("dir", "", "folder the report, the JSON and the charts are written to, without -update (default: a new folder in the system's temporary folder, printed)")
	out := fs.String("out", "", "Markdown report (default: EVALUATION.md with -update, else EVALUATION.md in --dir; \"-\": none)")
	jsonOut := fs.String("json", "", "JSON report (default: eval/results.json with -update, else results.json in --dir; \"-\": none)")
	charts := fs.String("charts", "eval", "folder for the SVG charts, relative to the Markdown report's folder")
	suite := fs.String("suite", "default", "default (the corpus and two long synthetic sessions), bill (synthetic sessions of 1x, 2.5x and 10x the window, Messages with thinking and Responses with reasoning, priced Anthropic-style, threshold 0.75) or all (both, in one report)")
	lengths := fs.String("lengths", "1,2.5,10", "bill suite: session lengths, in windows")
	reasoningLengths := fs.String("reasoning-lengths", "2.5", "bill suite: lengths, in windows, of the Messages session with thinking and the Responses session with reasoning")
	relevantLengths := fs.String("relevant-lengths", "10", "bill suite: lengths, in windows, at which the chat sessions also run in auto-relevant (memory.relevant_context)")
	seeds := fs.String("seeds", "1,2", "bill suite: seeds of the chat sessions")
	reasoningSeeds := fs.String("reasoning-seeds", "3", "bill suite: seeds of the Messages session with thinking and the Responses session with reasoning")
	formats := fs.String("formats", "chat,messages,responses", "bill suite: chat (the synthetic sessions at every length), messages, responses and gemini (with thinking or reasoning, at 2.5x); sessions given as arguments: the forms they are replayed in (chat, messages, responses, gemini)")
	summaryTokens := fs.Int("summary-tokens", 1000, "default suite: the fake summarizer's summaries, of about this many tokens and keeping the facts of what they summarize, as a model's are (0: a short canned text, which understates what summaries cost)")
	proxyLog := fs.Bool("proxy-log", false, "write the proxy's log (a line per request: what was applied and why) to stderr")
	coldModes := fs.String("cold-modes", "auto", "modes whose chat replays also run the cold-turn arm: replayed again with the engine's clock moved by the idle gaps (\"\": none)")
	replicas := fs.Int("replicas", 1, "replay each session through this many proxies that share only the cache, the requests handed to them in turn (a round-robin balancer)")
	redisURL := fs.String("redis", "", "with --replicas: the Redis the replicas share (each with its own memory layer in front, as deployed); \"\": one memory cache")
	check := fs.Bool("check", true, "exit non-zero when a check fails (rejected request, lost head or last message, over window, selective facts < 95%)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if *update && set["dir"] {
		return errors.New("-update writes the repository's report; --dir is for a report elsewhere: give one of them")
	}
	if *redisURL != "" {
		// host:port as redis-cli takes it, or a URL.
		if !strings.Contains(*redisURL, "://") {
			*redisURL = "redis://" + *redisURL
		}
		if !config.IsRedisURL(*redisURL) {
			return fmt.Errorf("--redis: %q is neither host:port nor a redis:// or rediss:// URL", *redisURL)
		}
	}
	cfg := eval.Config{Threshold: *threshold, Target: *target, Every: *every, Log: func(f string, a ...any) { fmt.Fprintf(stderr, f+"\n", a...) },
		ColdModes: splitList(*coldModes), Replicas: *replicas, Redis: *redisURL}
	if *summaryTokens > 0 {
		cfg.SummaryTokens, cfg.FaithfulSummaries = *summaryTokens, true
	}
	if *proxyLog {
		cfg.ProxyLog = slog.New(slog.NewTextHandler(stderr, nil))
	}
	// The planner plans for the bill the report leads with: the model is
	// priced Anthropic-style (cache reads 0.1, writes 1.25, 5 minutes).
	cfg.Model = &config.ModelConfig{Encoding: "o200k_base", SafetyFactor: 1, CacheRead: 0.1, CacheWrite: 1.25, CacheTTL: 5 * time.Minute}
	// Sessions given as arguments may be run in the opt-in modes too.
	known := append(slices.Clone(eval.Modes), eval.BillModes...)
	if *suite == "bill" {
		known = eval.BillModes
	}
	if *modes != "" {
		for _, name := range strings.Split(*modes, ",") {
			found := false
			for _, m := range known {
				if m.Name == strings.TrimSpace(name) {
					cfg.Modes = append(cfg.Modes, m)
					found = true
					break
				}
			}
			if !found {
				return fmt.Errorf("unknown mode %q", name)
			}
		}
	}
	command := "go run ./cmd/condense-eval " + strings.Join(args, " ")
	var bill *eval.Config
	switch *suite {
	case "bill":
		if err := billSuite(&cfg, *window, *lengths, *reasoningLengths, *relevantLengths, *formats, *seeds, *reasoningSeeds); err != nil {
			return err
		}
	case "all":
		// The default suite, then the bill suite with its own settings.
		bc := eval.Config{Threshold: 0.75, Every: *every, Log: cfg.Log, ProxyLog: cfg.ProxyLog, ColdModes: cfg.ColdModes, Replicas: cfg.Replicas, Redis: cfg.Redis}
		if err := billSuite(&bc, *window, *lengths, *reasoningLengths, *relevantLengths, *formats, *seeds, *reasoningSeeds); err != nil {
			return err
		}
		bill = &bc
	case "default":
	default:
		return fmt.Errorf("unknown suite %q", *suite)
	}
	if fs.NArg() == 0 && *suite != "bill" {
		files, err := corpus.Files(*corpusDir)
		if err != nil {
			return fmt.Errorf("reading the corpus (%s): %w", *corpusDir, err)
		}
		cfg.Sources = append(cfg.Sources, defaultSources(files, *corpusWindow, *window)...)
	}
	// Sessions given as arguments run in each format of --formats, as the
	// corpus does (Messages form for Claude Code's .jsonl files only).
	for _, a := range fs.Args() {
		specs := []string{a}
		if st, err := os.Stat(a); err == nil && st.IsDir() {
			if specs, err = corpus.Files(a); err != nil {
				return err
			}
		}
		for _, format := range strings.Split(*formats, ",") {
			for _, f := range specs {
				if format == "messages" && !strings.HasSuffix(f, ".jsonl") {
					continue
				}
				cfg.Sources = append(cfg.Sources, eval.Source{Spec: f, Window: *window, Format: format})
			}
		}
	}
	if err := outputs(update, outDir, out, jsonOut, set); err != nil {
		return err
	}
	rep, err := eval.Run(ctx, cfg)
	if err != nil {
		return err
	}
	if bill != nil {
		if rep.BillSuite, err = eval.Run(ctx, *bill); err != nil {
			return err
		}
		rep.BillSuite.Command = strings.TrimSpace(command)
	}
	if *out != "" {
		dir := filepath.Join(filepath.Dir(*out), *charts)
		fmt.Fprintf(stderr, "condense-eval: report %s, charts in %s\n", *out, dir)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		for _, s := range rep.Sessions() {
			if err := os.WriteFile(filepath.Join(dir, eval.ChartName(s)), []byte(rep.SVG(s)), 0o644); err != nil {
				return fmt.Errorf("writing chart: %w", err)
			}
			if err := os.WriteFile(filepath.Join(dir, eval.BillChartName(s)), []byte(rep.BillSVG(s)), 0o644); err != nil {
				return fmt.Errorf("writing chart: %w", err)
			}
		}
		if err := os.WriteFile(*out, []byte(rep.Markdown(*charts, strings.TrimSpace(command))), 0o644); err != nil {
			return fmt.Errorf("writing report: %w", err)
		}
	}
	if *jsonOut != "" {
		if err := os.MkdirAll(filepath.Dir(*jsonOut), 0o755); err != nil {
			return err
		}
		fmt.Fprintf(stderr, "condense-eval: JSON %s\n", *jsonOut)
		if err := os.WriteFile(*jsonOut, rep.JSON(), 0o644); err != nil {
			return fmt.Errorf("writing JSON: %w", err)
		}
	}
	problems := rep.Check(0.95)
	if *suite == "bill" {
		problems = append(problems, rep.CheckBill(eval.IssueGoals)...)
	}
	if *suite != "bill" {
		problems = append(problems, rep.CheckCorpusBill(eval.IssueGoals.AutoSlack)...)
	}
	if rep.BillSuite != nil {
		problems = append(problems, rep.BillSuite.Check(0.95)...)
		problems = append(problems, rep.BillSuite.CheckBill(eval.IssueGoals)...)
	}
	for _, p := range problems {
		fmt.Fprintln(stderr, "check failed:", p)
	}
	if *check && len(problems) > 0 {
		return fmt.Errorf("%d checks failed", len(problems))
	}
	return nil
}

// outputs settles where the report goes. With -update: the repository's
// EVALUATION.md and eval/results.json (the tracked report), unless -out or
// -json say otherwise. Without: the files are named in *dir, a new folder
// of the system's temporary folder when not given, so replaying other
// sessions never overwrites the tracked report. "-" means none.
func outputs(update *bool, dir, out, jsonOut *string, set map[string]bool) error {
	if *update {
		if !set["out"] {
			*out = "EVALUATION.md"
		}
		if !set["json"] {
			*jsonOut = filepath.Join("eval", "results.json")
		}
	} else if !set["out"] || !set["json"] {
		if *dir == "" {
			d, err := os.MkdirTemp("", "condense-eval-")
			if err != nil {
				return fmt.Errorf("making the output folder: %w", err)
			}
			*dir = d
		}
		if !set["out"] {
			*out = filepath.Join(*dir, "EVALUATION.md")
		}
		if !set["json"] {
			*jsonOut = filepath.Join(*dir, "results.json")
		}
	}
	for _, p := range []*string{out, jsonOut} {
		if *p == "-" {
			*p = ""
		}
	}
	return nil
}

// splitList splits a comma-separated flag, its items trimmed: "" is an
// empty list (not nil).
func splitList(s string) []string {
	out := []string{}
	for _, v := range strings.Split(s, ",") {
		if v = strings.TrimSpace(v); v != "" {
			out = append(out, v)
		}
	}
	return out
}
