package view

// Stripper is an optional capability of a Codec: a request without the
// optional fields of its format that some upstreams refuse ("Extra
// inputs are not permitted": Messages' context management, which a
// gateway or an older API does not know).
type Stripper interface {
	// StripExtras returns body without those fields (body itself when
	// it has none; every other byte stays), and the values of
	// comma-separated list headers that announce them (a beta), to remove
	// from the outgoing request.
	StripExtras(body []byte) (out []byte, remove []Header)
}
