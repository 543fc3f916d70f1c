package fakeupstream

import "github.com/condense-proxy/condense-proxy/internal/fakeupstream/fakesign"

// Signer issues and checks the opaque values the fakes bind to the content
// they produced (see fakesign.Signer).
type Signer = fakesign.Signer

// DefaultKey is the key the fakes sign with when given none.
var DefaultKey = fakesign.DefaultKey

// DefaultSigner signs with DefaultKey.
var DefaultSigner = fakesign.Default

func redactedText(data string) string { return fakesign.RedactedText(data) }

// abbrev shortens an opaque value for error messages as OpenAI does
// ("gAAA...Rg==").
func abbrev(v string) string {
	if len(v) <= 12 {
		return v
	}
	return v[:4] + "..." + v[len(v)-4:]
}
