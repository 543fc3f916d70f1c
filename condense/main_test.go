package condense

import (
	"os"
	"testing"

	"github.com/condense-proxy/condense-proxy/internal/derivecheck"
)

// TestMain checks every request the engine derives from an edit, in every
// test of the package, against a scan of the same body.
func TestMain(m *testing.M) { os.Exit(derivecheck.Main(m, VerifyDerived)) }
