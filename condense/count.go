package condense

import (
	"fmt"

	"github.com/condense-proxy/condense-proxy/view"
)

// Count returns body's tokens as Condense counts a request (its model's
// encoding, the safety factor applied): what a body the proxy builds
// after condensing (a recall round's) is measured against the report's
// Trigger and Window with.
func (e *Engine) Count(codec view.Codec, body []byte) (int, error) {
	var lim ModelLimits
	vr, err := codec.Scan(body, func(model string) string {
		lim = e.models.Limits(model)
		return lim.Encoding
	})
	if err != nil {
		return 0, fmt.Errorf("counting a request: %w", err)
	}
	return scale(vr.Total, lim.SafetyFactor), nil
}
