// Command condense-proxy is an OpenAI-compatible proxy that keeps coding
// agents' requests inside their model's context window.
//
//	condense-proxy [serve] [flags]            run the proxy (the default)
//	condense-proxy demo [flags]               the proxy in front of a scripted upstream, replaying a sample
//	condense-proxy condense [flags] FILE|-    condense one request body offline
//	condense-proxy version                    print the version
//	condense-proxy health [URL]               check a running proxy's /healthz
//
// main is a thin shell over Main, which tests call directly.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := Main(ctx, os.Args[1:], os.Stdout, os.Stderr, os.Environ()); err != nil {
		fmt.Fprintln(os.Stderr, "condense-proxy:", err)
		os.Exit(1)
	}
}
