package ui

import (
	"context"
	"fmt"
	"image"
	"image/color"
	"image/draw"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/condense-proxy/condense-proxy/condense"
	"github.com/condense-proxy/condense-proxy/internal/testenv"
	"github.com/condense-proxy/condense-proxy/proxy"
)

// chromium finds a Chromium to drive: $CHROMIUM, else Debian's chromium.
func chromium() string {
	if p := os.Getenv("CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"/usr/bin/chromium", "chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// tab starts a headless Chromium for t and returns its tab and a function
// returning the console errors seen so far (script errors, uncaught
// exceptions, failed loads, CSP violations). Without a Chromium the test
// skips, except in CI (testenv.InCI), where it fails.
func tab(t *testing.T) (context.Context, func() []string) {
	t.Helper()
	path := chromium()
	if path == "" {
		if testenv.InCI() {
			t.Fatal("no chromium: .ci/run installs Debian's chromium")
		}
		t.Skip("no chromium (set CHROMIUM or install Debian's chromium)")
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path),
		chromedp.DisableGPU,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("hide-scrollbars", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1320, 1000),
	)
	if os.Geteuid() == 0 {
		opts = append(opts, chromedp.NoSandbox)
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelTab := chromedp.NewContext(actx)
	ctx, cancelTimeout := context.WithTimeout(ctx, 2*time.Minute)
	t.Cleanup(func() { cancelTimeout(); cancelTab(); cancelAlloc() })

	var mu sync.Mutex
	var errs []string
	messages := chromedp.Console(ctx)
	go func() {
		for m, err := range messages {
			if err != nil {
				return
			}
			if m.Type == chromedp.ConsoleError || m.IsException() {
				mu.Lock()
				msg := m.String()
				if m.URL != "" {
					msg += " (" + m.URL + ")"
				}
				errs = append(errs, msg)
				mu.Unlock()
			}
		}
	}()
	return ctx, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), errs...)
	}
}

// paletted maps img onto its 256 most frequent colours: a page is mostly
// flat colours, and the PNG gets about three times smaller.
func paletted(img image.Image) *image.Paletted {
	counts := map[color.RGBA]int{}
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			counts[color.RGBAModel.Convert(img.At(x, y)).(color.RGBA)]++
		}
	}
	colors := make([]color.RGBA, 0, len(counts))
	for c := range counts {
		colors = append(colors, c)
	}
	sort.Slice(colors, func(i, j int) bool {
		if counts[colors[i]] != counts[colors[j]] {
			return counts[colors[i]] > counts[colors[j]]
		}
		ci, cj := colors[i], colors[j]
		return uint32(ci.R)<<24|uint32(ci.G)<<16|uint32(ci.B)<<8|uint32(ci.A) < uint32(cj.R)<<24|uint32(cj.G)<<16|uint32(cj.B)<<8|uint32(cj.A)
	})
	pal := make(color.Palette, 0, 256)
	for _, c := range colors[:min(256, len(colors))] {
		pal = append(pal, c)
	}
	p := image.NewPaletted(b, pal)
	draw.Draw(p, b, img, b.Min, draw.Src)
	return p
}

// TestBrowserAccess: with keys the page asks for one, keeps it for the tab
// and then shows the conversations; a non-loopback viewer without keys
// configured sees numbers only. No script error either way.
func TestBrowserAccess(t *testing.T) {
	ctx, consoleErrors := tab(t)
	fill := func(u *UI) {
		for _, ev := range session(bearer("agent-key"), "conv", "gpt-4o", "agent/1", time.Now().Add(-10*time.Minute), 50) {
			u.Record(ev)
		}
	}
	keyed := New(Options{Scope: scopeOf, AuthKeys: []string{"agent-key"}, AdminKeys: []string{"admin-key"}})
	fill(keyed)
	open := New(Options{Scope: scopeOf})
	fill(open)
	keyedSrv := httptest.NewServer(keyed)
	// Every request looks remote: no keys configured means numbers only.
	openSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.RemoteAddr = remote
		open.ServeHTTP(w, r)
	}))
	t.Cleanup(func() { keyed.Close(); open.Close(); keyedSrv.Close(); openSrv.Close() })

	poll := func(what, js string) {
		t.Helper()
		if err := chromedp.Do(ctx, chromedp.Poll[chromedp.Void](js, chromedp.WithPollingTimeout(20*time.Second))); err != nil {
			t.Fatalf("waiting for %s: %v (console: %v)", what, err, consoleErrors())
		}
	}
	// Types a key into the prompt and submits it, as a person would.
	login := func(key string) {
		t.Helper()
		js := `document.querySelector('#login-key').value = '` + key + `'; document.querySelector('#login-form').requestSubmit()`
		if err := chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](js)); err != nil {
			t.Fatal(err)
		}
	}
	if err := chromedp.Do(ctx, chromedp.Navigate(keyedSrv.URL+"/ui")); err != nil {
		t.Fatal(err)
	}
	poll("the key prompt", `!document.querySelector('#login').hidden && document.querySelector('#app').hidden`)
	login("wrong-key")
	poll("the refusal", `document.querySelector('#login-error').textContent.includes('not accepted')`)
	login("agent-key")
	poll("the caller's conversations", `document.querySelector('#login').hidden && document.querySelectorAll('#convs tbody tr').length === 1 && document.querySelector('#access').textContent.includes('your')`)
	// The key stays for the tab: a reload needs no prompt.
	if err := chromedp.Do(ctx, chromedp.Reload()); err != nil {
		t.Fatal(err)
	}
	poll("the conversations after a reload", `document.querySelectorAll('#convs tbody tr').length === 1`)
	stored, err := chromedp.Run(ctx, chromedp.Evaluate[string](`sessionStorage.getItem('condense-proxy-ui-key')`))
	if err != nil || stored != "agent-key" {
		t.Errorf("session storage holds %q (%v)", stored, err)
	}

	if err := chromedp.Do(ctx, chromedp.Navigate(openSrv.URL+"/ui")); err != nil {
		t.Fatal(err)
	}
	poll("the numbers-only list", `!document.querySelector('#numbers-only').hidden && document.querySelectorAll('#convs tbody tr').length === 1`)
	// Bills are numbers: shown to this viewer too.
	poll("the numbers-only bill", `[...document.querySelectorAll('#cards .stat')].some(c => c.querySelector('.label').textContent === 'Bill (estimated)' && /^[\d.]+[kM]? → [\d.]+[kM]?$/.test(c.querySelector('.value').textContent)) &&
		/^[\d.]+[kM]? \(-?[\d.]+%\)(\$[\d.,]+|unknown price)$/.test(document.querySelector('#convs tbody tr').children[6].textContent)`)
	if err := chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](`document.querySelector('#convs tbody tr').click()`)); err != nil {
		t.Fatal(err)
	}
	poll("a marker", `document.querySelectorAll('#conv svg.timeline .marker-summary').length > 0`)
	if err := chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](`document.querySelector('#conv svg.timeline .marker-summary').dispatchEvent(new MouseEvent('click'))`)); err != nil {
		t.Fatal(err)
	}
	poll("the numbers-only detail", `document.querySelectorAll('#detail .change').length > 0`)
	if n, _ := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll('#detail .change pre, #detail .change button').length`)); n != 0 {
		t.Errorf("numbers-only detail shows %d texts or originals buttons", n)
	}

	var errs []string
	for _, e := range consoleErrors() {
		// The 401s of the key prompt are expected; the browser logs them.
		if !strings.Contains(e, "401") {
			errs = append(errs, e)
		}
	}
	if len(errs) > 0 {
		t.Errorf("console errors:\n%s", strings.Join(errs, "\n"))
	}
}

// TestBrowserObserve: an observe request says what auto would have
// applied and billed.
func TestBrowserObserve(t *testing.T) {
	ctx, consoleErrors := tab(t)
	u := New(Options{Scope: scopeOf, TrustLoopback: true})
	t0 := time.Now().Add(-10 * time.Minute)
	obs := observed(session(bearer("ka"), "conv-o", "gpt-4o", "agent/1", t0, 40))
	record(u, obs)
	srv := httptest.NewServer(u)
	t.Cleanup(func() { u.Close(); srv.Close() })
	var id string
	u.st.mu.Lock()
	for _, c := range u.st.byID {
		id = c.id
	}
	u.st.mu.Unlock()

	poll := func(what, js string) {
		t.Helper()
		if err := chromedp.Do(ctx, chromedp.Poll[chromedp.Void](js, chromedp.WithPollingTimeout(20*time.Second))); err != nil {
			t.Fatalf("waiting for %s: %v (console: %v)", what, err, consoleErrors())
		}
	}
	last := obs[len(obs)-1].Report
	if err := chromedp.Do(ctx, chromedp.Navigate(srv.URL+"/ui#/c/"+id+"/r/"+fmt.Sprint(len(obs)))); err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("observe → would apply %s, %s tokens", last.WouldApply, commas(last.WouldTokensAfter))
	poll("the observe row", `document.querySelector('#conv tbody tr')?.children[3].textContent === '`+want+`'`)
	poll("the would-be bill", `[...document.querySelectorAll('#detail .chip')].some(c => c.textContent.startsWith('would bill `+commas(int(math.Round(last.WouldBill)))+` '))`)
	poll("the observe card", `[...document.querySelectorAll('#cards .stat.observe .sub')].some(c => c.textContent.includes('40 requests observed'))`)
	if errs := consoleErrors(); len(errs) > 0 {
		t.Errorf("console errors:\n%s", strings.Join(errs, "\n"))
	}
}

// commas writes n as the page does (en-US grouping).
func commas(n int) string {
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// TestBrowserHoldoutAndDollars: the holdout card says there is too little
// data to tell below 10 conversations an arm and gives the saving from
// there; bills show in dollars where the model has a price, "unknown
// price" where it has none.
func TestBrowserHoldoutAndDollars(t *testing.T) {
	ctx, consoleErrors := tab(t)
	u := New(Options{Scope: scopeOf, TrustLoopback: true})
	t0 := time.Now().Add(-10 * time.Minute)
	add := func(arm string, from, to int, model string, price, bill float64) {
		for i := from; i < to; i++ {
			rep := condense.Report{Model: model, Counted: true, Conversation: fmt.Sprintf("%s-%s-%d", arm, model, i), Format: "chat",
				TokensBefore: 9000, TokensAfter: 9000, PrefixReused: -1, Bill: bill, BillUncondensed: bill, InputPrice: price,
				Arm: arm, Applied: condense.AppliedFull, Window: 16000, Trigger: 12800}
			if arm == condense.ArmHoldout {
				rep.Applied, rep.WouldApply = condense.AppliedObserve, condense.AppliedFull
			}
			u.Record(proxy.Event{Time: t0.Add(time.Duration(i) * time.Second), Scope: bearer("k"), Mode: "auto", Status: 200, Report: rep})
		}
	}
	add(condense.ArmCondensed, 0, 12, "gpt-4o", 2.5, 1000)
	add(condense.ArmHoldout, 0, 9, "gpt-4o", 2.5, 2000)
	add("", 0, 1, "team-local-model", 0, 500)
	srv := httptest.NewServer(u)
	t.Cleanup(func() { u.Close(); srv.Close() })
	poll := func(what, js string) {
		t.Helper()
		if err := chromedp.Do(ctx, chromedp.Poll[chromedp.Void](js, chromedp.WithPollingTimeout(20*time.Second))); err != nil {
			t.Fatalf("waiting for %s: %v (console: %v)", what, err, consoleErrors())
		}
	}
	card := func(label string) string {
		return `[...document.querySelectorAll('#cards .stat')].find(c => c.querySelector('.label').textContent === '` + label + `')`
	}
	if err := chromedp.Do(ctx, chromedp.Navigate(srv.URL+"/ui")); err != nil {
		t.Fatal(err)
	}
	poll("too little data", `(`+card("Holdout arm")+`)?.querySelector('.value').textContent === 'too little data to tell'`)
	poll("the arms' counts", `(`+card("Holdout arm")+`).querySelector('.sub').textContent.includes('condensed: 12 conversations') && (`+card("Holdout arm")+`).querySelector('.sub').textContent.includes('holdout: 9 conversations')`)
	// gpt-4o at $2.50 / MTok: 1,000 → $0.0025; 2,000 → $0.005.
	poll("dollars per conversation", `[...document.querySelectorAll('#convs tbody tr')].some(r => r.children[6].textContent.includes(')$0.00250')) &&
		[...document.querySelectorAll('#convs tbody tr')].some(r => r.children[6].textContent.includes(')$0.00500'))`)
	poll("unknown price", `[...document.querySelectorAll('#convs tbody tr')].some(r => r.children[2].textContent === 'team-local-model' && r.children[6].textContent.includes(')unknown price'))`)
	poll("the dollars card", `(`+card("Bill in dollars (estimated)")+`).querySelector('.sub').textContent.includes('1 request of unknown price left out')`)

	add(condense.ArmHoldout, 9, 10, "gpt-4o", 2.5, 2000) // a tenth
	if err := chromedp.Do(ctx, chromedp.Reload()); err != nil {
		t.Fatal(err)
	}
	poll("the saving", `(`+card("Holdout arm")+`)?.querySelector('.value').textContent === 'saved 50.0%'`)
	if errs := consoleErrors(); len(errs) > 0 {
		t.Errorf("console errors:\n%s", strings.Join(errs, "\n"))
	}
}
