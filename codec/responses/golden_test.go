package responses

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/condense-proxy/condense-proxy/condense"
	"github.com/condense-proxy/condense-proxy/selective"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// golden compares got with testdata/name, or rewrites it with -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the golden file (go test -update rewrites it after review)\n got: %.400s", name, got)
	}
}

// TestGoldenParse records how the codec sees a Codex request: each item's
// role, step glue, frozen flag, calls, answers, digestible outputs and
// tokens, and the head.
func TestGoldenParse(t *testing.T) {
	body, err := os.ReadFile("testdata/codex.json")
	if err != nil {
		t.Fatal(err)
	}
	c := newCodec()
	r, err := c.Scan(body, o200k)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Parse(r); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "model %s, %d items, head %d, total %d tokens\n", r.Model, len(r.Items), r.Head, r.Total)
	for i, it := range r.Items {
		typ, _ := kind(r.Raw(i))
		fmt.Fprintf(&b, "%3d %-24s %-9s tokens=%-5d", i, typ, it.Role, it.Tokens)
		if it.Glue {
			b.WriteString(" glue")
		}
		if it.Frozen {
			b.WriteString(" frozen")
		}
		for _, cl := range it.Calls {
			fmt.Fprintf(&b, " call=%s(%s)", cl.Name, cl.ID)
			if cl.ArgsSpan[1] > 0 {
				b.WriteString("+args")
			}
		}
		for _, o := range it.Outputs {
			if o.Own {
				b.WriteString(" own-text")
			} else {
				fmt.Fprintf(&b, " answers=%s", o.CallID)
			}
			if !o.Frozen {
				b.WriteString("+digestible")
			}
		}
		b.WriteString("\n")
	}
	golden(t, "codex.parse.golden", []byte(b.String()))
}

// TestGoldenModes condenses the Codex request in every mode (forced, at a
// small window) and compares the bodies with the golden files; each is
// also checked for validity, and every byte outside the input array is
// the received one.
func TestGoldenModes(t *testing.T) {
	in, err := os.ReadFile("testdata/codex.json")
	if err != nil {
		t.Fatal(err)
	}
	for _, mode := range []string{condense.ModeFull, condense.ModeSelective, condense.ModeAuto, condense.ModeTruncate} {
		t.Run(mode, func(t *testing.T) {
			e, _ := newEngine(30000, condense.Options{SelectiveEnabled: true, ChunkTokens: 2000, SummaryBudgetTokens: 1500, KeepRecentTurns: 2,
				Selective: selective.Options{KeepRecentToolOutputs: 3, MinToolOutputTokens: 200, ClearToolInputs: true}})
			res, err := e.Condense(context.Background(), condense.Request{Codec: New(sharedCounter), Body: in, Mode: mode, Force: true, Scope: "golden"})
			if err != nil {
				t.Fatal(err)
			}
			if res.Report.Applied == condense.AppliedNone {
				t.Fatalf("not condensed: %s", res.Report.Reason)
			}
			checkValid(t, in, res.Body)
			golden(t, "codex."+mode+".golden", res.Body)
		})
	}
}
