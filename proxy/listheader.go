package proxy

import (
	"net/http"
	"strings"
)

// removeListHeader removes value from a comma-separated list header, and
// the header when nothing is left.
func removeListHeader(h http.Header, name, value string) {
	vals := h.Values(name)
	if len(vals) == 0 {
		return
	}
	var kept []string
	changed := false
	for _, v := range vals {
		var parts []string
		for _, e := range strings.Split(v, ",") {
			if strings.TrimSpace(e) == value {
				changed = true
				continue
			}
			parts = append(parts, e)
		}
		if len(parts) > 0 {
			kept = append(kept, strings.TrimSpace(strings.Join(parts, ",")))
		}
	}
	if !changed {
		return
	}
	h.Del(name)
	for _, v := range kept {
		h.Add(name, v)
	}
}
