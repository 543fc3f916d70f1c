package main

import (
	"runtime/debug"
	"sync"
)

// currentVersion is the version this binary reports: -ldflags'
// main.version when set, else what the Go toolchain wrote into the
// binary (buildVersion).
var currentVersion = sync.OnceValue(func() string {
	bi, _ := debug.ReadBuildInfo()
	return buildVersion(bi, version)
})

// buildVersion is override when not empty; else the main module's
// version from bi — a release tag (go install …@v1.2.0), or the
// pseudo-version go build derives from the checkout's commit ("+dirty"
// when it has uncommitted changes) —, else, for a build without a module
// version ("(devel)"), "devel" with the commit (vcs.revision, 12 hex
// digits) and "-dirty" for uncommitted changes (vcs.modified) when the
// build recorded them; "unknown" without build info.
func buildVersion(bi *debug.BuildInfo, override string) string {
	if override != "" {
		return override
	}
	if bi == nil {
		return "unknown"
	}
	if v := bi.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	v := "devel"
	var rev string
	var dirty bool
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if rev != "" {
		v += " " + rev[:min(12, len(rev))]
		if dirty {
			v += "-dirty"
		}
	}
	return v
}
