package main

import (
	"context"
	"io"
	"net/url"
	"os"
	"regexp"
	"strings"
	"testing"

	yaml "go.yaml.in/yaml/v3"

	"github.com/condense-proxy/condense-proxy/config"
)

type composeFile struct {
	Services map[string]struct {
		Build       any               `yaml:"build"`
		Image       string            `yaml:"image"`
		Command     []string          `yaml:"command"`
		Ports       []string          `yaml:"ports"`
		Environment map[string]string `yaml:"environment"`
		EnvFile     []string          `yaml:"env_file"`
		Volumes     []string          `yaml:"volumes"`
		Healthcheck struct {
			Test []string `yaml:"test"`
		} `yaml:"healthcheck"`
		DependsOn map[string]struct {
			Condition string `yaml:"condition"`
		} `yaml:"depends_on"`
	} `yaml:"services"`
}

// TestComposeMatchesTheCode checks docker-compose.yml (no Docker engine
// runs here) against what the code really reads and serves.
func TestComposeMatchesTheCode(t *testing.T) {
	raw, err := os.ReadFile("../../docker-compose.yml")
	if err != nil {
		t.Fatal(err)
	}
	var c composeFile
	if err := yaml.Unmarshal(raw, &c); err != nil {
		t.Fatalf("docker-compose.yml: %v", err)
	}
	for _, name := range []string{"condense-proxy", "litellm", "redis"} {
		if _, ok := c.Services[name]; !ok {
			t.Fatalf("service %q missing", name)
		}
	}
	proxySvc := c.Services["condense-proxy"]
	known := map[string]bool{}
	for _, k := range config.Keys() {
		known[config.EnvName(k)] = true
	}
	for k := range proxySvc.Environment {
		if !known[k] {
			t.Errorf("condense-proxy environment %s is not a key the config reads", k)
		}
	}
	env := proxySvc.Environment
	if env["CONDENSE_UPSTREAM"] != "http://litellm:4000" {
		t.Errorf("upstream %q, want http://litellm:4000", env["CONDENSE_UPSTREAM"])
	}
	if u, err := url.Parse(env["CONDENSE_REDIS_URL"]); err != nil || u.Hostname() != "redis" {
		t.Errorf("redis URL %q does not point at the redis service", env["CONDENSE_REDIS_URL"])
	}
	// The default listen address is loopback only, unreachable through a
	// published port: the compose file says every interface, explicitly.
	if env["CONDENSE_LISTEN"] != "0.0.0.0:8080" || len(proxySvc.Ports) == 0 || proxySvc.Ports[0] != "8080:8080" {
		t.Errorf("listen %q / ports %v disagree", env["CONDENSE_LISTEN"], proxySvc.Ports)
	}
	if proxySvc.Build == nil {
		t.Error("condense-proxy is not built from the Dockerfile")
	}
	// Each replica keys scopes with the same secret, from .env.
	if !strings.Contains(env["CONDENSE_SCOPE_SECRET"], "${CONDENSE_SCOPE_SECRET") {
		t.Errorf("CONDENSE_SCOPE_SECRET %q is not read from .env", env["CONDENSE_SCOPE_SECRET"])
	}
	// Whatever config the environment sets must load.
	var environ []string
	for k, v := range env {
		environ = append(environ, k+"="+v)
	}
	if _, err := config.Load(nil, environ); err != nil {
		t.Errorf("the compose environment does not load: %v", err)
	}
	hc := strings.Join(proxySvc.Healthcheck.Test, " ")
	if !strings.Contains(hc, "/condense-proxy health") || !strings.Contains(hc, "/healthz") {
		t.Errorf("proxy health check %q", hc)
	}
	for dep, d := range proxySvc.DependsOn {
		if d.Condition != "service_healthy" || len(c.Services[dep].Healthcheck.Test) == 0 {
			t.Errorf("depends_on %s: condition %q, health check %v", dep, d.Condition, c.Services[dep].Healthcheck.Test)
		}
	}
	lite := c.Services["litellm"]
	if !strings.Contains(strings.Join(lite.Command, " "), "--port 4000") || !strings.Contains(lite.Image, "litellm") {
		t.Errorf("litellm service: image %q command %v", lite.Image, lite.Command)
	}
	if len(lite.Volumes) == 0 || !strings.HasPrefix(lite.Volumes[0], "./litellm-config.yaml:") {
		t.Errorf("litellm config not mounted: %v", lite.Volumes)
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
	for _, v := range []string{"CONDENSE_SCOPE_SECRET", "POSTGRES_PASSWORD", "LITELLM_MASTER_KEY"} {
		if !strings.Contains(string(example), v+"=") {
			t.Errorf(".env.example lacks %s", v)
		}
	}
	if !strings.Contains(c.Services["litellm"].Environment["DATABASE_URL"], "@db:5432/") || len(c.Services["db"].Healthcheck.Test) == 0 {
		t.Error("LiteLLM has no database for its virtual keys")
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
