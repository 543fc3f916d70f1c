package proxy

import (
	"context"
	"encoding/json"
	"net/http"
	"time"
)

// healthz answers 200 while the process runs.
func (p *Proxy) healthz(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	w.Write([]byte(`{"status":"ok"}` + "\n"))
}

// readyz answers 200 when the upstream is configured and the cache is
// reachable or explicitly degraded (Redis down, served as misses), and 503
// otherwise.
func (p *Proxy) readyz(w http.ResponseWriter, r *http.Request) {
	status := http.StatusOK
	checks := map[string]string{"upstream": "configured"}
	if p.opts.Upstream == nil || p.opts.Upstream.Host == "" {
		status = http.StatusServiceUnavailable
		checks["upstream"] = "not configured"
	}
	if p.opts.Cache != nil {
		ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
		err := p.opts.Cache.Ping(ctx)
		cancel()
		switch {
		case err == nil:
			checks["cache"] = "ok"
		// The page is open to everyone: the error's detail (the cache's
		// address) goes to the log only.
		case p.opts.CacheDegraded != nil && p.opts.CacheDegraded():
			checks["cache"] = "degraded"
			p.log.Debug("readyz: cache degraded", "err", err)
		default:
			status = http.StatusServiceUnavailable
			checks["cache"] = "unreachable"
			p.log.Debug("readyz: cache unreachable", "err", err)
		}
	} else {
		checks["cache"] = "memory"
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]any{"ready": status == http.StatusOK, "checks": checks})
}
