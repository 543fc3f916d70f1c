// Package derivecheck compares a request a codec derived from an edit
// (view.Deriver) with a fresh scan of the same body, for tests: what the
// engine reads of a scanned request, and the parse of both.
package derivecheck

import (
	"flag"
	"fmt"
	"os"
	"reflect"
	"sync"
	"testing"

	"github.com/condense-proxy/condense-proxy/view"
)

// Check scans out with c (in derived's encoding) and reports how derived
// differs from that scan (view.SameScan), or, both parsed, how their
// items' roles, calls, answers, outputs, glue and frozen marks differ;
// nil when they do not.
func Check(c view.Codec, derived *view.Request, out []byte) error {
	enc := derived.Encoding
	scanned, err := c.Scan(out, func(string) string { return enc })
	if err != nil {
		return fmt.Errorf("%s: derived a request from a body its scan refuses: %w", c.Format(), err)
	}
	// A derived request parsed already (view.ParsePatched) is compared
	// as it is, with the scan parsed first: a parse may move the head
	// (past a compaction). Otherwise a copy is parsed, after the scans
	// are compared: the engine parses derived itself later.
	parsed, errD, errS := derived, error(nil), error(nil)
	if derived.Parsed {
		errS = c.Parse(scanned)
	}
	if err := view.SameScan(derived, scanned); err != nil {
		return fmt.Errorf("%s: derived request differs from its scan: %w", c.Format(), err)
	}
	if !derived.Parsed {
		cp := *derived
		cp.Items = append([]view.Item(nil), derived.Items...)
		parsed, errD, errS = &cp, c.Parse(&cp), c.Parse(scanned)
	}
	if (errD == nil) != (errS == nil) {
		return fmt.Errorf("%s: derived request parses with %v, its scan with %v", c.Format(), errD, errS)
	}
	if errD != nil {
		return nil
	}
	if parsed.Head != scanned.Head {
		return fmt.Errorf("%s: parsed head %d, scanned %d", c.Format(), parsed.Head, scanned.Head)
	}
	for i := range parsed.Items {
		if !reflect.DeepEqual(parsed.Items[i], scanned.Items[i]) {
			return fmt.Errorf("%s: parsed item %d %+v, scanned %+v", c.Format(), i, parsed.Items[i], scanned.Items[i])
		}
	}
	return nil
}

var (
	mu       sync.Mutex
	checked  int
	failures []error
)

// Record checks derived against a scan of out (Check), counts the check
// and keeps its failure: the hook a test package's TestMain hands
// condense.VerifyDerived.
func Record(c view.Codec, derived *view.Request, out []byte) {
	err := Check(c, derived, out)
	mu.Lock()
	defer mu.Unlock()
	checked++
	if err != nil {
		failures = append(failures, err)
	}
}

// Checked returns how many checks Record counted.
func Checked() int {
	mu.Lock()
	defer mu.Unlock()
	return checked
}

// Main runs a test package's tests with every derived request checked
// (verify is condense.VerifyDerived) and fails the run when one differed
// from its scan. A run with benchmarks (-test.bench) checks nothing: the
// checks would scan every condensed body the benchmarks measure.
func Main(m *testing.M, verify func(func(view.Codec, *view.Request, []byte))) int {
	flag.Parse()
	if f := flag.Lookup("test.bench"); f == nil || f.Value.String() == "" {
		verify(Record)
	}
	code := m.Run()
	mu.Lock()
	defer mu.Unlock()
	for i, err := range failures {
		if i == 10 {
			fmt.Fprintf(os.Stderr, "derivecheck: … %d more\n", len(failures)-i)
			break
		}
		fmt.Fprintf(os.Stderr, "derivecheck: %v\n", err)
	}
	if len(failures) > 0 && code == 0 {
		code = 1
	}
	return code
}
