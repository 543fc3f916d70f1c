// Package formatnames holds a test of the module's layout: the codecs
// (codec/) own every byte of a wire format, so no other non-test file
// names a format's fields in a string. It has no code of its own.
package formatnames
