package ui

import (
	"context"
	"image"
	"image/color"
	"image/draw"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
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
// skips, except under CI=true, where it fails.
func tab(t *testing.T) (context.Context, func() []string) {
	t.Helper()
	path := chromium()
	if path == "" {
		if os.Getenv("CI") == "true" {
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
