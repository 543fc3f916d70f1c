// Package redistest starts throw-away Redis servers and Redis Clusters for
// tests, from the redis-server and redis-cli binaries (.ci/run installs
// them). Without the binaries a test is skipped, except in CI
// (testenv.InCI), where it fails.
package redistest

import (
	"bytes"
	"fmt"
	"net"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/condense-proxy/condense-proxy/internal/testenv"
)

// need returns the path of binary, skipping or failing the test without it.
func need(t testing.TB, binary string) string {
	t.Helper()
	p, err := exec.LookPath(binary)
	if err != nil {
		if testenv.InCI() {
			t.Fatalf("in CI and %s is missing (.ci/run installs redis-server and redis-cli)", binary)
		}
		t.Skipf("%s not found: install redis-server (and redis-cli) to run this test", binary)
	}
	return p
}

// freePort returns a TCP port free on 127.0.0.1 at the time of asking.
func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// Server is one redis-server process on a local port.
type Server struct {
	Port int
	dir  string
	args []string
	cmd  *exec.Cmd
	bin  string
	t    testing.TB
}

// URL is the server's redis:// URL.
func (s *Server) URL() string { return fmt.Sprintf("redis://127.0.0.1:%d/0", s.Port) }

// Addr is host:port.
func (s *Server) Addr() string { return "127.0.0.1:" + strconv.Itoa(s.Port) }

// Start starts a redis-server (no persistence) on a free port, stopped when
// the test ends; extra are more server arguments.
func Start(t testing.TB, extra ...string) *Server {
	t.Helper()
	s := &Server{Port: freePort(t), dir: t.TempDir(), bin: need(t, "redis-server"), t: t}
	s.args = append([]string{"--port", strconv.Itoa(s.Port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", s.dir}, extra...)
	s.start()
	t.Cleanup(s.Stop)
	return s
}

func (s *Server) start() {
	s.t.Helper()
	s.cmd = exec.Command(s.bin, s.args...)
	var out bytes.Buffer
	s.cmd.Stdout, s.cmd.Stderr = &out, &out
	if err := s.cmd.Start(); err != nil {
		s.t.Fatalf("starting redis-server: %v", err)
	}
	for i := 0; i < 100; i++ {
		if c, err := net.DialTimeout("tcp", s.Addr(), 100*time.Millisecond); err == nil {
			c.Close()
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	s.t.Fatalf("redis-server on %d did not start: %s", s.Port, out.String())
}

// Stop kills the server (a crash, as an outage looks to clients).
func (s *Server) Stop() {
	if s.cmd != nil && s.cmd.Process != nil {
		s.cmd.Process.Kill()
		s.cmd.Wait()
		s.cmd = nil
	}
}

// Restart starts the server again on the same port, empty.
func (s *Server) Restart() {
	s.t.Helper()
	s.Stop()
	s.start()
}

// Cluster starts n cluster-enabled servers and joins them into one Redis
// Cluster with redis-cli --cluster create (no replicas); it returns the
// cluster URL in go-redis's form.
func Cluster(t testing.TB, n int) string {
	t.Helper()
	cli := need(t, "redis-cli")
	var nodes []*Server
	var addrs []string
	for i := 0; i < n; i++ {
		s := Start(t, "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf", "--cluster-node-timeout", "2000")
		nodes = append(nodes, s)
		addrs = append(addrs, s.Addr())
	}
	args := append([]string{"--cluster", "create"}, addrs...)
	args = append(args, "--cluster-replicas", "0", "--cluster-yes")
	if out, err := exec.Command(cli, args...).CombinedOutput(); err != nil {
		t.Fatalf("redis-cli --cluster create: %v: %s", err, out)
	}
	// Wait until every node sees the cluster as ok.
	for _, s := range nodes {
		ok := false
		for i := 0; i < 100 && !ok; i++ {
			out, _ := exec.Command(cli, "-p", strconv.Itoa(s.Port), "cluster", "info").Output()
			ok = strings.Contains(string(out), "cluster_state:ok")
			if !ok {
				time.Sleep(100 * time.Millisecond)
			}
		}
		if !ok {
			t.Fatalf("cluster node %d never reported cluster_state:ok", s.Port)
		}
	}
	u := "redis://" + addrs[0]
	for i, a := range addrs[1:] {
		if i == 0 {
			u += "?addr=" + a
		} else {
			u += "&addr=" + a
		}
	}
	return u
}
