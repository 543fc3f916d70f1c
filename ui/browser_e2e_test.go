package ui_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image/png"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
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
	page := ui.New(ui.Options{Scope: scopeOf, TrustLoopback: true})
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
	// Another session in observe mode: forwarded as received, the engine
	// saying what auto would have done.
	obsSess, _ := corpus.Synthetic(8, 60_000)
	obs, err := replay.Run(context.Background(), obsSess, st.Fake, st.Counter, replay.Options{
		ProxyURL: st.Proxy.URL, Model: "gpt-4.1", Mode: "observe", APIKey: "sk-observe", Window: 16000, Drain: st.Drain,
		Client: st.Proxy.Client(),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("observed %d requests", len(obs.Requests))
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
	rowOf := func(model string) string {
		return `[...document.querySelectorAll('#convs tbody tr')].find(r => r.children[2].textContent === '` + model + `')`
	}
	// The bill, as the real engine estimated it: the cards show the
	// overview's figures, and a replayed session reads from the cache.
	ov := overview(t, st.Proxy.URL)
	t.Logf("bill %.0f → %.0f (saving %v), cache-read share %v; observe %.0f → %.0f (saving %v)",
		ov.Totals.BillUncondensed, ov.Totals.Bill, deref(ov.BillSaving), deref(ov.CacheReadShare),
		ov.Totals.Observe.Bill, ov.Totals.Observe.WouldBill, deref(ov.ObserveSaving))
	if ov.CacheReadShare == nil || *ov.CacheReadShare < 0.3 || ov.BillSaving == nil || ov.Totals.Observe.Requests != int64(len(obs.Requests)) ||
		ov.ObserveSaving == nil || ov.Totals.Observe.WouldBill <= 0 {
		t.Errorf("overview after the replays: %+v", ov)
	}
	card := func(label string) string {
		return `[...document.querySelectorAll('#cards .stat')].find(c => c.querySelector('.label').textContent === '` + label + `')`
	}
	wait("the bill card", `(`+card("Bill (estimated)")+`) !== undefined`)
	text := func(js string) string {
		t.Helper()
		s, err := chromedp.Run(ctx, chromedp.Evaluate[string](js))
		if err != nil {
			t.Fatalf("%s: %v", js, err)
		}
		return s
	}
	if got, want := text(card("Bill (estimated)")+`.querySelector('.value').textContent`), short(ov.Totals.BillUncondensed)+" → "+short(ov.Totals.Bill); got != want {
		t.Errorf("bill card shows %q, want %q", got, want)
	}
	if got, want := text(card("Bill (estimated)")+`.querySelector('.sub').textContent`), fmt.Sprintf("%.1f%%", 100*math.Abs(*ov.BillSaving)); !strings.Contains(got, want) {
		t.Errorf("bill card says %q, want the saving %s", got, want)
	}
	if got, want := text(card("Prompt cache")+`.querySelector('.value').textContent`), fmt.Sprintf("%.1f%%", 100**ov.CacheReadShare); got != want {
		t.Errorf("cache-friendly card shows %q, want the cache-read share %s", got, want)
	}
	if got := text(card("Summaries") + `.querySelector('.sub').textContent`); !strings.Contains(got, "from the summary cache") || !strings.Contains(got, "summarizer call") {
		t.Errorf("summaries card says %q: want the summary cache's and the summarizer's shares apart", got)
	}
	if got, want := text(card("Observe: auto would bill")+`.querySelector('.sub').textContent`), fmt.Sprintf("%d requests observed", len(obs.Requests)); !strings.Contains(got, want) {
		t.Errorf("observe card says %q, want %q", got, want)
	}
	// The bill in dollars: each request's at its model's input price.
	if got := text(card("Bill in dollars (estimated)") + `.querySelector('.value').textContent`); (ov.Totals.Priced > 0) != strings.HasPrefix(got, "$") ||
		(ov.Totals.Priced == 0) != (got == "unknown price") {
		t.Errorf("dollars card shows %q with %d priced requests", got, ov.Totals.Priced)
	}
	// The per-model table has the bill columns (in dollars too), a row per model.
	if n := eval(`document.querySelectorAll('#models thead th').length`); n != 10 {
		t.Errorf("per-model table has %d columns", n)
	}
	// The observed conversation: its requests say what auto would have done.
	if err := chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](rowOf("gpt-4.1")+`.click()`)); err != nil {
		t.Fatal(err)
	}
	wait("the observed conversation", `document.querySelector('#conv .panel-head')?.textContent.includes('gpt-4.1') && [...document.querySelectorAll('#conv .chip')].some(c => c.textContent.startsWith('observe '))`)
	if n := eval(`[...document.querySelectorAll('#conv tbody tr')].filter(r => /^observe → would apply \w+, [\d,]+ tokens$/.test(r.children[3].textContent)).length`); n == 0 {
		t.Errorf("no request of the observed conversation says what auto would apply: %s", text(`document.querySelector('#conv tbody tr').textContent`))
	}

	// The replayed conversation: the model the replay sent, its requests.
	rowJS := rowOf("gpt-4o")
	if eval(`(`+rowJS+`) ? 1 : 0`) != 1 {
		t.Fatal("the replayed conversation is not listed")
	}
	if err := chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](`(`+rowJS+`).click()`)); err != nil {
		t.Fatal(err)
	}
	wait("the timeline", `document.querySelector('#conv .panel-head')?.textContent.includes('gpt-4o ') && document.querySelectorAll('#conv svg.timeline circle.pt').length > 0`)
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
	// (The detail shown, not the previous conversation's, hidden.)
	wait("the engine's changes", `location.hash.includes('/r/') && !document.querySelector('#detail').hidden &&
		document.querySelector('#detail h2')?.textContent === 'Request #' + location.hash.split('/r/')[1] &&
		document.querySelectorAll('#detail .change').length > 0 && document.querySelectorAll('#detail svg.shape rect').length > 0 &&
		[...document.querySelectorAll('#detail .change pre')].every(p => p.clientHeight > 0)`)

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

// overviewFigures is what the test reads of /ui/api/overview.
type overviewFigures struct {
	Totals struct {
		Bill            float64 `json:"bill"`
		BillUncondensed float64 `json:"bill_uncondensed"`
		Priced          int64   `json:"priced"`
		Observe         struct {
			Requests  int64   `json:"requests"`
			Bill      float64 `json:"bill"`
			WouldBill float64 `json:"would_bill"`
		} `json:"observe"`
	} `json:"totals"`
	BillSaving     *float64 `json:"bill_saving"`
	CacheReadShare *float64 `json:"cache_read_share"`
	ObserveSaving  *float64 `json:"observe_saving"`
}

func overview(t *testing.T, base string) overviewFigures {
	t.Helper()
	resp, err := http.Get(base + "/ui/api/overview")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var ov overviewFigures
	if err := json.NewDecoder(resp.Body).Decode(&ov); err != nil {
		t.Fatal(err)
	}
	return ov
}

// short is the page's short(Math.round(x)): 1.2M, 34k, 5.6k, 789.
func short(x float64) string {
	n := math.Round(x)
	tenths := func(v float64) string { return strconv.FormatFloat(math.Floor(v*10+0.5)/10, 'f', 1, 64) }
	switch {
	case math.Abs(n) >= 1e7:
		return strconv.FormatFloat(math.Floor(n/1e6+0.5), 'f', 0, 64) + "M"
	case math.Abs(n) >= 1e6:
		return tenths(n/1e6) + "M"
	case math.Abs(n) >= 1e4:
		return strconv.FormatFloat(math.Floor(n/1e3+0.5), 'f', 0, 64) + "k"
	case math.Abs(n) >= 1e3:
		return tenths(n/1e3) + "k"
	}
	return strconv.FormatFloat(n, 'f', 0, 64)
}

func deref(f *float64) any {
	if f == nil {
		return nil
	}
	return *f
}
