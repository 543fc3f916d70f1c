package ui_test

import (
	"bytes"
	"context"
	"fmt"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/condense-proxy/condense-proxy/internal/corpus"
	"github.com/condense-proxy/condense-proxy/internal/harness"
	"github.com/condense-proxy/condense-proxy/internal/replay"
	"github.com/condense-proxy/condense-proxy/proxy"
	"github.com/condense-proxy/condense-proxy/ui"
)

// This file is an external test: the proxy it drives is built by package
// app (through the harness), which imports ui.

// scopeOf is the scope the harness's proxy gives a caller.
var scopeOf = proxy.NewScoper([]byte(harness.ScopeSecret), nil).Scope

// TestBrowser loads /ui in headless Chromium after a synthetic session was
// replayed through the real proxy: the conversation is listed, its timeline
// has drawn shapes, a request's detail opens, nothing went to the console
// as an error, and a screenshot is written.
func TestBrowser(t *testing.T) {
	ctx, consoleErrors := ui.Tab(t)
	page := ui.New(ui.Options{Scope: scopeOf})
	st := harness.New(harness.Options{Window: 16000, Summarizer: "extractive", Recorder: page, UI: page})
	t.Cleanup(st.Close)
	t.Cleanup(page.Close) // first: the page's event stream holds a connection
	start := time.Now()

	sess, _ := corpus.Synthetic(7, 120_000)
	res, err := replay.Run(context.Background(), sess, st.Fake, st.Counter, replay.Options{
		ProxyURL: st.Proxy.URL, Model: "gpt-4o", APIKey: "sk-browser", Window: 16000, Drain: st.Drain,
		Client: st.Proxy.Client(),
	})
	if err != nil {
		t.Fatal(err)
	}
	condensed := 0
	for _, r := range res.Requests {
		if r.Applied != "none" {
			condensed++
		}
	}
	t.Logf("replayed %d requests (%d condensed) in %v", len(res.Requests), condensed, time.Since(start).Round(time.Millisecond))
	if condensed == 0 {
		t.Fatalf("the replay condensed nothing (%d requests): the page would have nothing to show", len(res.Requests))
	}
	// A constructed conversation too, with everything the engine will
	// report (changes with texts, shapes, prefix reuse).
	for _, ev := range ui.Session(scopeOf(nil), "constructed", "claude-sonnet-4", "claude-cli/2.0.14", time.Now().Add(-20*time.Minute), 60) {
		page.Record(ev)
	}

	wait := func(what, js string) {
		t.Helper()
		if err := chromedp.Do(ctx, chromedp.Poll[chromedp.Void](js, chromedp.WithPollingTimeout(20*time.Second))); err != nil {
			dbg, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`location.hash + ' | live: ' + document.querySelector('#live').textContent + ' | detail: ' + document.querySelector('#detail').hidden + ' ' + document.querySelector('#detail').innerHTML.slice(0, 800)`))
			t.Log(dbg)
			t.Fatalf("waiting for %s: %v (console: %v)", what, err, consoleErrors())
		}
	}
	eval := func(js string) int {
		t.Helper()
		n, err := chromedp.Run(ctx, chromedp.Evaluate[int](js))
		if err != nil {
			t.Fatalf("%s: %v", js, err)
		}
		return n
	}

	if err := chromedp.Do(ctx, chromedp.Navigate(st.Proxy.URL+"/ui")); err != nil {
		t.Fatal(err)
	}
	wait("the conversations list", `document.querySelectorAll('#convs tbody tr').length >= 2`)
	// The replayed conversation: the model the replay sent, its requests.
	rowOf := func(model string) string {
		return `[...document.querySelectorAll('#convs tbody tr')].find(r => r.children[2].textContent === '` + model + `')`
	}
	rowJS := rowOf("gpt-4o")
	if eval(`(`+rowJS+`) ? 1 : 0`) != 1 {
		t.Fatal("the replayed conversation is not listed")
	}
	if err := chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](`(`+rowJS+`).click()`)); err != nil {
		t.Fatal(err)
	}
	wait("the timeline", `document.querySelectorAll('#conv svg.timeline circle.pt').length > 0`)
	if n := eval(`document.querySelectorAll('#conv svg.timeline circle.pt').length`); n != len(res.Requests) {
		t.Errorf("timeline has %d points, the replay sent %d requests", n, len(res.Requests))
	}
	for _, sel := range []string{"polyline.received-line", "polyline.forwarded-line", "path.threshold-line", "path.window-line", ".marker"} {
		if eval(`document.querySelectorAll('#conv svg.timeline `+sel+`').length`) == 0 {
			t.Errorf("timeline has no %s", sel)
		}
	}
	if pts := eval(`document.querySelector('#conv svg.timeline polyline.forwarded-line').points.numberOfItems`); pts != len(res.Requests) {
		t.Errorf("forwarded line has %d points, want %d", pts, len(res.Requests))
	}
	// A condensed request's detail, from its marker.
	if err := chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](`document.querySelector('#conv svg.timeline .marker').dispatchEvent(new MouseEvent('click'))`)); err != nil {
		t.Fatal(err)
	}
	wait("the request detail", `!document.querySelector('#detail').hidden && document.querySelectorAll('#detail .chips .chip').length > 0`)

	// The constructed conversation: changes with their texts.
	if err := chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](rowOf("claude-sonnet-4")+`.click()`)); err != nil {
		t.Fatal(err)
	}
	wait("the constructed timeline", `document.querySelector('#conv .panel-head').textContent.includes('claude-sonnet-4') && document.querySelectorAll('#conv svg.timeline .marker-summary').length > 0`)
	if err := chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](`document.querySelector('#conv svg.timeline .marker-summary').dispatchEvent(new MouseEvent('click'))`)); err != nil {
		t.Fatal(err)
	}
	wait("a summary's text", `[...document.querySelectorAll('#detail .change.summary pre')].some(p => p.textContent.includes('Task and intent'))`)
	if eval(`document.querySelectorAll('#detail .change.summary button').length`) == 0 {
		t.Error("no originals button on the summary")
	}
	if eval(`document.querySelectorAll('#detail svg.shape rect').length`) == 0 {
		t.Error("the request's shapes are not drawn")
	}
	// The originals of a change, asked from the page: this summary is not
	// in the engine's store, so the page says why it has none.
	if err := chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](`document.querySelector('#detail .change.summary button').click()`)); err != nil {
		t.Fatal(err)
	}
	wait("the originals answer", `document.querySelector('#detail .change.summary .orig').textContent.includes('Not available')`)
	// A live update does not redraw the detail: what was opened stays open.
	before := eval(`Number(document.querySelector('#cards .value').textContent.replace(/,/g, ''))`)
	page.Record(ui.Session(scopeOf(nil), "another", "gpt-4o-mini", "agent/2", time.Now(), 1)[0])
	wait("the live update", fmt.Sprintf(`Number(document.querySelector('#cards .value').textContent.replace(/,/g, '')) === %d`, before+1))
	if eval(`document.querySelector('#detail .change.summary .orig').textContent.includes('Not available') ? 1 : 0`) != 1 {
		t.Error("a live update closed the originals the reader opened")
	}

	// Back to the replayed conversation: a condensation as the engine
	// reported it, changes and shapes included.
	if err := chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](`(`+rowJS+`).click()`)); err != nil {
		t.Fatal(err)
	}
	wait("the replayed timeline again", `document.querySelector('#conv .panel-head').textContent.includes('gpt-4o ') && !location.hash.includes('/r/')`)
	marker := `(document.querySelector('#conv svg.timeline .marker-summary') || document.querySelector('#conv svg.timeline .marker-digest') || document.querySelector('#conv svg.timeline .marker'))`
	if err := chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](marker+`.dispatchEvent(new MouseEvent('click'))`)); err != nil {
		t.Fatal(err)
	}
	wait("the engine's changes", `location.hash.includes('/r/') && document.querySelectorAll('#detail .change').length > 0 && document.querySelectorAll('#detail svg.shape rect').length > 0`)

	// The whole page, from the top, once laid out.
	if err := chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](`window.scrollTo(0, 0)`),
		chromedp.Poll[chromedp.Void](`new Promise(r => requestAnimationFrame(() => requestAnimationFrame(() => r(true))))`, chromedp.WithPollingTimeout(5*time.Second))); err != nil {
		t.Fatal(err)
	}
	shot, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "ui.png")
	if err := os.WriteFile(file, shot, 0o644); err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(shot))
	if err != nil {
		t.Fatalf("screenshot is not a PNG: %v", err)
	}
	if b := img.Bounds(); len(shot) < 50<<10 || b.Dx() < 1000 || b.Dy() < 1000 {
		t.Errorf("screenshot %s: %d bytes, %dx%d: too small to show the page", file, len(shot), b.Dx(), b.Dy())
	}
	// UI_SCREENSHOT=docs/ui.png (from the repository root: ../docs/ui.png)
	// refreshes README's picture, compressed harder than Chromium does.
	if out := os.Getenv("UI_SCREENSHOT"); out != "" {
		var buf bytes.Buffer
		enc := png.Encoder{CompressionLevel: png.BestCompression}
		if err := enc.Encode(&buf, ui.Paletted(img)); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(out, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var errs []string
	for _, e := range consoleErrors() {
		// The browser logs the originals' 404 asked for above.
		if !strings.Contains(e, "404") || !strings.Contains(e, "/v1/condense/originals/") {
			errs = append(errs, e)
		}
	}
	if len(errs) > 0 {
		t.Errorf("console errors:\n%s", strings.Join(errs, "\n"))
	}
}
