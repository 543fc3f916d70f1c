package ui

// Helpers of the internal tests, for the external ones (browser_e2e_test.go).
var (
	Tab      = tab
	Session  = session
	Observed = observed
	Paletted = paletted
)
