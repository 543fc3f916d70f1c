// Command condense-eval replays agent sessions through an in-process
// condense-proxy in every mode and writes EVALUATION.md, a JSON file and
// one SVG chart per session.
//
//	condense-eval [flags] [SESSION ...]
//
// A SESSION is a session file (*.traj.json, *.traj, *.jsonl), a folder of
// them, or synthetic:SEED:CHARS. With none, the default suite runs: every
// session of ../shared/corpus/raw at --corpus-window and two long
// synthetic sessions at --window.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"

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

func run(ctx context.Context, args []string, stderr io.Writer) error {
	fs := flag.NewFlagSet("condense-eval", flag.ContinueOnError)
	fs.SetOutput(stderr)
	window := fs.Int("window", 128000, "context window for synthetic sessions and for sessions given as arguments")
	corpusWindow := fs.Int("corpus-window", 32000, "context window for the default suite's corpus sessions")
	corpusDir := fs.String("corpus", filepath.Join("..", "shared", "corpus", "raw"), "corpus folder of the default suite")
	threshold := fs.Float64("threshold", 0.8, "fraction of the window that triggers condensing")
	modes := fs.String("modes", "", "comma-separated modes (default: off,full-extractive,full-llm,selective,auto)")
	every := fs.Int("every", 1, "replay every n-th request only")
	out := fs.String("out", "EVALUATION.md", "Markdown report (empty: none)")
	jsonOut := fs.String("json", filepath.Join("eval", "results.json"), "JSON report (empty: none)")
	charts := fs.String("charts", "eval", "folder for the SVG charts, relative to the Markdown report's folder")
	check := fs.Bool("check", true, "exit non-zero when a check fails (rejected request, lost head or last message, over window, selective facts < 95%)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	cfg := eval.Config{Threshold: *threshold, Every: *every, Log: func(f string, a ...any) { fmt.Fprintf(stderr, f+"\n", a...) }}
	if *modes != "" {
		for _, name := range strings.Split(*modes, ",") {
			found := false
			for _, m := range eval.Modes {
				if m.Name == strings.TrimSpace(name) {
					cfg.Modes = append(cfg.Modes, m)
					found = true
				}
			}
			if !found {
				return fmt.Errorf("unknown mode %q", name)
			}
		}
	}
	command := "go run ./cmd/condense-eval " + strings.Join(args, " ")
	if fs.NArg() == 0 {
		files, err := corpus.Files(*corpusDir)
		if err != nil {
			return fmt.Errorf("reading the corpus (%s): %w", *corpusDir, err)
		}
		// Each corpus session in chat form, in Responses form (as Codex
		// sends), and Claude Code's also in their native Messages form.
		for _, format := range []string{"chat", "messages", "responses"} {
			for _, f := range files {
				if format == "messages" && !strings.HasSuffix(f, ".jsonl") {
					continue
				}
				cfg.Sources = append(cfg.Sources, eval.Source{Spec: f, Window: *corpusWindow, Format: format})
			}
		}
		// Long sessions: content about 8× a 128k window.
		for _, s := range []string{"synthetic:1:4000000", "synthetic:2:4000000"} {
			cfg.Sources = append(cfg.Sources, eval.Source{Spec: s, Window: *window})
		}
	}
	for _, a := range fs.Args() {
		if st, err := os.Stat(a); err == nil && st.IsDir() {
			files, err := corpus.Files(a)
			if err != nil {
				return err
			}
			for _, f := range files {
				cfg.Sources = append(cfg.Sources, eval.Source{Spec: f, Window: *window})
			}
			continue
		}
		cfg.Sources = append(cfg.Sources, eval.Source{Spec: a, Window: *window})
	}
	rep, err := eval.Run(ctx, cfg)
	if err != nil {
		return err
	}
	if *out != "" {
		dir := filepath.Join(filepath.Dir(*out), *charts)
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
		if err := os.WriteFile(*jsonOut, rep.JSON(), 0o644); err != nil {
			return fmt.Errorf("writing JSON: %w", err)
		}
	}
	problems := rep.Check(0.95)
	for _, p := range problems {
		fmt.Fprintln(stderr, "check failed:", p)
	}
	if *check && len(problems) > 0 {
		return fmt.Errorf("%d checks failed", len(problems))
	}
	return nil
}
