package main

import (
	"context"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/compose-spec/compose-go/v2/loader"
	"github.com/compose-spec/compose-go/v2/types"

	"github.com/condense-proxy/condense-proxy/config"
)

// composeRequired are the variables docker-compose.yml refuses to start
// without (${VAR:?…}), each with a value a test gives it; the password
// holds the characters that broke an interpolated DATABASE_URL.
var composeRequired = map[string]string{
	"CONDENSE_SCOPE_SECRET": "0123456789abcdef0123456789abcdef",
	"CONDENSE_AUTH_KEYS":    "sk-agent-one,sk-agent-two",
	"CONDENSE_UI_KEYS":      "ui-admin-key-0123456789",
	"LITELLM_MASTER_KEY":    "sk-master-0123456789",
	"POSTGRES_PASSWORD":     "p@ss/w:rd?#%",
}

// loadCompose parses docker-compose.yml with compose-go, the loader of
// docker compose itself (interpolation, schema validation, normalization),
// in the environment env. No Docker engine runs here.
func loadCompose(t *testing.T, env map[string]string) (*types.Project, error) {
	t.Helper()
	dir, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	details := types.ConfigDetails{
		WorkingDir:  dir,
		ConfigFiles: []types.ConfigFile{{Filename: filepath.Join(dir, "docker-compose.yml")}},
		Environment: env,
	}
	return loader.LoadWithContext(ctx, details, func(o *loader.Options) {
		o.SetProjectName("condense-proxy", true)
		// .env is the user's (not in the repository): env stands for it.
		o.SkipResolveEnvironment = true
	})
}

func composeEnv(over map[string]string) map[string]string {
	env := map[string]string{}
	for k, v := range composeRequired {
		env[k] = v
	}
	for k, v := range over {
		env[k] = v
	}
	return env
}

// TestComposeSafeByDefault: docker-compose.yml, as docker compose reads
// it, publishes its ports on 127.0.0.1 only unless the user opts in,
// refuses to start without the master key, the proxy's keys and the
// secrets, pins every image to a version, gives every health check a
// start period (LiteLLM's long enough for its first migrations) and
// hands LiteLLM the database password apart, so @ / : in it break
// nothing.
func TestComposeSafeByDefault(t *testing.T) {
	p, err := loadCompose(t, composeEnv(nil))
	if err != nil {
		t.Fatalf("docker-compose.yml does not load with the required variables set: %v", err)
	}
	for _, name := range []string{"condense-proxy", "litellm", "db", "redis"} {
		if _, ok := p.Services[name]; !ok {
			t.Fatalf("service %q missing", name)
		}
	}

	// Ports: loopback unless opted in.
	published := 0
	for name, s := range p.Services {
		for _, port := range s.Ports {
			published++
			if port.HostIP != "127.0.0.1" {
				t.Errorf("%s publishes %s:%d on %q, want 127.0.0.1 by default", name, port.Published, port.Target, port.HostIP)
			}
		}
	}
	if published < 2 {
		t.Errorf("%d published ports, want the proxy's and LiteLLM's", published)
	}
	opened, err := loadCompose(t, composeEnv(map[string]string{"CONDENSE_BIND": "0.0.0.0", "LITELLM_BIND": "192.0.2.7"}))
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{"condense-proxy": "0.0.0.0", "litellm": "192.0.2.7"} {
		if ports := opened.Services[name].Ports; len(ports) != 1 || ports[0].HostIP != want {
			t.Errorf("%s with its bind variable set: %+v, want host IP %s", name, ports, want)
		}
	}

	// Secrets and keys: required (":?"), empty counts as missing.
	for v := range composeRequired {
		for _, val := range []string{"", "unset"} {
			env := composeEnv(nil)
			if val == "unset" {
				delete(env, v)
			} else {
				env[v] = val
			}
			if _, err := loadCompose(t, env); err == nil || !strings.Contains(err.Error(), v) {
				t.Errorf("loads with %s %s: %v", v, map[string]string{"": "empty", "unset": "unset"}[val], err)
			}
		}
	}
	proxyEnv := p.Services["condense-proxy"].Environment
	for _, v := range []string{"CONDENSE_AUTH_KEYS", "CONDENSE_UI_KEYS", "CONDENSE_SCOPE_SECRET"} {
		if got := proxyEnv[v]; got == nil || *got != composeRequired[v] {
			t.Errorf("proxy's %s = %v, want .env's", v, got)
		}
	}
	if got := p.Services["litellm"].Environment["LITELLM_MASTER_KEY"]; got == nil || *got != composeRequired["LITELLM_MASTER_KEY"] {
		t.Errorf("litellm's LITELLM_MASTER_KEY = %v", got)
	}

	// Images pinned to a version: no latest, main-*, *-stable or bare
	// major ("16-alpine").
	pinned := regexp.MustCompile(`^v?\d+\.\d+(\.\d+)?(-[a-z0-9.]+)?$`)
	for name, s := range p.Services {
		if s.Image == "" {
			continue // built here
		}
		i := strings.LastIndexByte(s.Image, ':')
		tag := ""
		if i > strings.LastIndexByte(s.Image, '/') {
			tag = s.Image[i+1:]
		}
		if !pinned.MatchString(tag) || regexp.MustCompile(`latest|main|stable|nightly|edge`).MatchString(tag) {
			t.Errorf("%s: image %q is not pinned to a version", name, s.Image)
		}
	}

	// Health checks with start periods.
	for name, s := range p.Services {
		if s.HealthCheck == nil || len(s.HealthCheck.Test) == 0 {
			t.Errorf("%s has no health check", name)
			continue
		}
		if s.HealthCheck.StartPeriod == nil || *s.HealthCheck.StartPeriod <= 0 {
			t.Errorf("%s's health check has no start_period", name)
		}
	}
	if sp := p.Services["litellm"].HealthCheck.StartPeriod; sp == nil || time.Duration(*sp) < 2*time.Minute {
		t.Errorf("litellm's start_period %v: its first migrations take minutes", sp)
	}

	// The database password reaches LiteLLM apart and verbatim; LiteLLM
	// builds its URL from the parts, URL-encoding each (quote_plus), so
	// the URL it connects with has the password intact.
	lite := p.Services["litellm"].Environment
	if _, ok := lite["DATABASE_URL"]; ok {
		t.Error("litellm gets an interpolated DATABASE_URL: a password with @, / or : breaks it")
	}
	get := func(k string) string {
		if v := lite[k]; v != nil {
			return *v
		}
		return ""
	}
	if get("DATABASE_PASSWORD") != composeRequired["POSTGRES_PASSWORD"] || get("DATABASE_HOST") == "" || get("DATABASE_USERNAME") == "" || get("DATABASE_NAME") == "" {
		t.Errorf("litellm's database parts: %v", lite)
	}
	u, err := url.Parse("postgresql://" + url.QueryEscape(get("DATABASE_USERNAME")) + ":" + url.QueryEscape(get("DATABASE_PASSWORD")) +
		"@" + get("DATABASE_HOST") + "/" + url.QueryEscape(get("DATABASE_NAME")))
	if pw, _ := u.User.Password(); err != nil || pw != composeRequired["POSTGRES_PASSWORD"] || u.Host != "db:5432" {
		t.Errorf("LiteLLM's database URL: %v %v", u, err)
	}
	db := p.Services["db"].Environment
	if v := db["POSTGRES_PASSWORD"]; v == nil || *v != composeRequired["POSTGRES_PASSWORD"] || *db["POSTGRES_USER"] != get("DATABASE_USERNAME") || *db["POSTGRES_DB"] != get("DATABASE_NAME") {
		t.Errorf("db and litellm disagree: %v / %v", db, lite)
	}

	// .env.example names every required variable and fills in none: a
	// copied example must not start with working secrets.
	example, err := os.ReadFile("../../.env.example")
	if err != nil {
		t.Fatal(err)
	}
	for v := range composeRequired {
		m := regexp.MustCompile(`(?m)^` + v + `=(.*)$`).FindStringSubmatch(string(example))
		if m == nil {
			t.Errorf(".env.example lacks %s", v)
		} else if strings.TrimSpace(m[1]) != "" {
			t.Errorf(".env.example pre-fills %s=%s", v, m[1])
		}
	}
}

// TestComposeMatchesTheCode checks docker-compose.yml, as docker compose
// reads it, against what the code really reads and serves.
func TestComposeMatchesTheCode(t *testing.T) {
	p, err := loadCompose(t, composeEnv(nil))
	if err != nil {
		t.Fatal(err)
	}
	proxySvc := p.Services["condense-proxy"]
	known := map[string]bool{}
	for _, k := range config.Keys() {
		known[config.EnvName(k)] = true
	}
	env := map[string]string{}
	var environ []string
	for k, v := range proxySvc.Environment {
		if !known[k] {
			t.Errorf("condense-proxy environment %s is not a key the config reads", k)
		}
		if v != nil {
			env[k] = *v
			environ = append(environ, k+"="+*v)
		}
	}
	if env["CONDENSE_UPSTREAM"] != "http://litellm:4000" {
		t.Errorf("upstream %q, want http://litellm:4000", env["CONDENSE_UPSTREAM"])
	}
	if u, err := url.Parse(env["CONDENSE_REDIS_URL"]); err != nil || u.Hostname() != "redis" {
		t.Errorf("redis URL %q does not point at the redis service", env["CONDENSE_REDIS_URL"])
	}
	// The default listen address is loopback only, unreachable through a
	// published port: the compose file says every interface, explicitly.
	if env["CONDENSE_LISTEN"] != "0.0.0.0:8080" || len(proxySvc.Ports) != 1 || proxySvc.Ports[0].Target != 8080 || proxySvc.Ports[0].Published != "8080" {
		t.Errorf("listen %q / ports %+v disagree", env["CONDENSE_LISTEN"], proxySvc.Ports)
	}
	if proxySvc.Build == nil {
		t.Error("condense-proxy is not built from the Dockerfile")
	}
	// Whatever config the environment sets must load, auth and page keys
	// included.
	cfg, err := config.Load(nil, environ)
	if err != nil {
		t.Fatalf("the compose environment does not load: %v", err)
	}
	if len(cfg.Auth.Keys) != 2 || len(cfg.UI.Keys) != 1 || cfg.ScopeSecret == "" {
		t.Errorf("auth.keys %d, ui.keys %d, scope secret set %v", len(cfg.Auth.Keys), len(cfg.UI.Keys), cfg.ScopeSecret != "")
	}
	hc := strings.Join(proxySvc.HealthCheck.Test, " ")
	if !strings.Contains(hc, "/condense-proxy health") || !strings.Contains(hc, "/healthz") {
		t.Errorf("proxy health check %q", hc)
	}
	for dep, d := range proxySvc.DependsOn {
		if d.Condition != "service_healthy" || p.Services[dep].HealthCheck == nil {
			t.Errorf("depends_on %s: condition %q, health check %v", dep, d.Condition, p.Services[dep].HealthCheck)
		}
	}
	lite := p.Services["litellm"]
	if !strings.Contains(strings.Join(lite.Command, " "), "--port 4000") || !strings.Contains(lite.Image, "litellm") {
		t.Errorf("litellm service: image %q command %v", lite.Image, lite.Command)
	}
	if len(lite.Volumes) == 0 || filepath.Base(lite.Volumes[0].Source) != "litellm-config.yaml" || lite.Volumes[0].Target != "/app/config.yaml" {
		t.Errorf("litellm config not mounted: %+v", lite.Volumes)
	}

	// The LiteLLM config reads keys from the environment only, and every
	// variable it reads is in .env.example.
	lc, err := os.ReadFile("../../litellm-config.yaml")
	if err != nil {
		t.Fatal(err)
	}
	example, err := os.ReadFile("../../.env.example")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(lc), "\n") {
		if strings.Contains(line, "api_key:") || strings.Contains(line, "master_key:") {
			m := regexp.MustCompile(`os\.environ/(\w+)`).FindStringSubmatch(line)
			if m == nil {
				t.Errorf("litellm-config.yaml has a literal key: %q", strings.TrimSpace(line))
				continue
			}
			if !strings.Contains(string(example), m[1]+"=") {
				t.Errorf(".env.example lacks %s", m[1])
			}
		}
	}
	dockerfile, err := os.ReadFile("../../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"HEALTHCHECK", `"/condense-proxy", "health"`, "USER nonroot", "CGO_ENABLED=0", `ENV CONDENSE_LISTEN="0.0.0.0:8080"`} {
		if !strings.Contains(string(dockerfile), want) {
			t.Errorf("Dockerfile lacks %q", want)
		}
	}
}

// TestHealthCommand runs the health subcommand against a live proxy.
func TestHealthCommand(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ready := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		done <- serve(ctx, []string{"--listen", "127.0.0.1:0", "--upstream", "http://127.0.0.1:1"}, io.Discard, io.Discard, nil, ready)
	}()
	addr := <-ready
	if err := health(ctx, []string{"http://" + addr + "/healthz"}, io.Discard, nil); err != nil {
		t.Fatalf("health of a running proxy: %v", err)
	}
	if err := health(ctx, []string{"http://" + addr + "/nope-not-health"}, io.Discard, nil); err == nil {
		t.Error("health passed on a path that is not /healthz")
	}
	cancel()
	<-done
	if err := health(context.Background(), []string{"http://" + addr + "/healthz"}, io.Discard, nil); err == nil {
		t.Error("health passed with the proxy stopped")
	}
}
