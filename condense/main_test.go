package condense

import (
	"fmt"
	"os"
	"testing"

	"github.com/condense-proxy/condense-proxy/internal/derivecheck"
)

// TestMain checks every request the engine derives from an edit, in every
// test of the package, against a scan of the same body; and every report
// Condense returns against the vocabularies of its Path and DegradedKinds
// (kinds_test.go).
func TestMain(m *testing.M) {
	reportHook = recordKinds
	code := derivecheck.Main(m, VerifyDerived)
	if n, first := kindFailures(); n > 0 {
		fmt.Fprintf(os.Stderr, "kinds: %d reports whose Path or DegradedKinds do not tell what their prose does; the first: %v\n", n, first)
		if code == 0 {
			code = 1
		}
	}
	os.Exit(code)
}
