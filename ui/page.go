package ui

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/base64"
	"net/http"
	"sync"
)

// The page is one document: index.html with style.css and app.js put
// inline, so it needs no other request before it can ask for a key, and a
// Content-Security-Policy that allows exactly those two (by hash) and
// requests to this origin — nothing from anywhere else.
//
//go:embed assets/index.html assets/style.css assets/app.js
var assets embed.FS

var page = sync.OnceValues(func() ([]byte, string) {
	read := func(name string) []byte {
		b, err := assets.ReadFile("assets/" + name)
		if err != nil {
			panic("ui: embedded asset missing: " + name)
		}
		return b
	}
	style, script := read("style.css"), read("app.js")
	doc := read("index.html")
	doc = bytes.Replace(doc, []byte("/*STYLE*/"), style, 1)
	doc = bytes.Replace(doc, []byte("/*SCRIPT*/"), script, 1)
	hash := func(b []byte) string {
		sum := sha256.Sum256(b)
		return "'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'"
	}
	csp := "default-src 'none'; script-src " + hash(script) + "; style-src " + hash(style) +
		"; connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
	return doc, csp
})

// page serves the document. With keys configured and none accepted it is
// served with 401: the document itself holds no data, and asks for the key.
func (u *UI) page(w http.ResponseWriter, r *http.Request) {
	doc, csp := page()
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Content-Security-Policy", csp)
	if u.viewerOf(r).access == accessNone {
		w.WriteHeader(http.StatusUnauthorized)
	}
	w.Write(doc)
}
