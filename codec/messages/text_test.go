package messages

import "github.com/condense-proxy/condense-proxy/selective"

// The codec is what selective digests through.
var _ selective.Codec = (*Codec)(nil)
