package selective

import (
	"math/rand"
	"slices"
	"strings"
	"testing"
)

var gatePieces = []string{" ", "  ", "\t", ":", ": ", ":1", "12", "3 ", "0", "a", "x", "/", "./", "src/a.go", ".", "@", "-", "→", "│",
	"var ", "const ", "let ", "package ", "import ", "from x import ", "func ", "def ", "async def ", "class ", "type ", "struct ",
	"interface ", "enum ", "trait ", "impl", "pub(crate) fn ", "pub fn ", "fn ", "export default async function", "export const ",
	"module ", "#include ", "#define ", "public ", "static x(", "{", "(", "passed", "failed", "errors", "error", "skipped", "xfailed",
	"xpassed", "tests", "test", "PASSED", "Skipped", "ſkipped", "Tests run: 3, Failures: 0, Errors: 1", "tests RUN: 4, failures: 1, errors: 0",
	"--- FAIL: TestX", "FAIL", "ok ", "é"}

func gateLine(rng *rand.Rand) string {
	var b strings.Builder
	for n := rng.Intn(7); n >= 0; n-- {
		b.WriteString(gatePieces[rng.Intn(len(gatePieces))])
	}
	return b.String()
}

// TestGatesAreTheExpressions: each gated check answers what its
// expression answers.
func TestGatesAreTheExpressions(t *testing.T) {
	rng := rand.New(rand.NewSource(37))
	for i := 0; i < 20000 && !t.Failed(); i++ {
		l := gateLine(rng)
		if got, want := stripLineNumFast(l), stripLineNum(l); got != want {
			t.Errorf("stripLineNumFast(%q) = %q, want %q", l, got, want)
		}
		if got, want := isDeclaration(l), declaration.MatchString(l); got != want {
			t.Errorf("isDeclaration(%q) = %v, want %v", l, got, want)
		}
		if got, want := isGrepLine(l), grepLine.MatchString(l); got != want {
			t.Errorf("isGrepLine(%q) = %v, want %v", l, got, want)
		}
		if got, want := grepSubmatch(l), grepLine.FindStringSubmatch(l); !slices.Equal(got, want) {
			t.Errorf("grepSubmatch(%q) = %q, want %q", l, got, want)
		}
		if got, want := isPathLine(l), pathLine.MatchString(l); got != want {
			t.Errorf("isPathLine(%q) = %v, want %v", l, got, want)
		}
		if got, want := isPassFail(l), passFailCount.MatchString(l); got != want {
			t.Errorf("isPassFail(%q) = %v, want %v", l, got, want)
		}
	}
}

// TestDigestsReadFewBytes: digests of pathological outputs of a
// megabyte — identical lines, one line, distinct lines — hand the
// per-line expressions a few hundred bytes, whatever the kind of digest:
// the work stays linear and small (a lost gate or memo reads megabytes).
func TestDigestsReadFewBytes(t *testing.T) {
	var distinct strings.Builder
	for i := 0; distinct.Len() < 1<<20; i++ {
		distinct.WriteString("2026-11-28 INFO worker-" + strings.Repeat("x", i%50) + " heartbeat ok queue=17\n")
	}
	outputs := map[string]string{
		"repeated": strings.Repeat("2026-11-28T04:43:26Z INFO worker-3 heartbeat ok queue=17 latency=3ms\n", 1<<20/70),
		"one line": strings.Repeat("abcd efgh ", 1<<20/10),
		"distinct": distinct.String(),
	}
	calls := map[string]Input{
		"file":    {Tool: "bash", Args: `{"command":"cat service.log"}`},
		"search":  {Tool: "grep", Args: `{"pattern":"x"}`},
		"log":     {Tool: "bash", Args: `{"command":"go test ./..."}`},
		"generic": {Tool: "bash", Args: `{"command":"./run.sh"}`},
	}
	for name, out := range outputs {
		for kind, in := range calls {
			in.Content = out
			before := expressionBytes.Load()
			Digest(in)
			if read := expressionBytes.Load() - before; read > 4096 {
				t.Errorf("%s output, %s digest: the expressions read %d bytes of %d", name, kind, read, len(out))
			}
		}
	}
}
