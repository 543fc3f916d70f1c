// Package fakesign issues and checks the opaque values the fake upstreams
// bind to the content they produced (thinking signatures, redacted
// thinking data, reasoning encrypted_content), for the fakes
// (internal/fakeupstream) and for converters that prepare recorded
// sessions so the fakes accept them (internal/corpus). It depends on
// nothing of the project.
package fakesign

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"strings"
)

// DefaultKey is the HMAC key of DefaultSigner, which the fakes use when
// they are given no key of their own. It is a fixed test value, so that
// converters (internal/corpus) can sign recorded blocks ahead of time and
// the fakes accept them.
var DefaultKey = []byte("condense-proxy fake upstream signing key v1")

// Default signs with DefaultKey.
var Default = Signer{Key: DefaultKey}

// Signer issues and checks the opaque values a real provider binds to the
// content it produced — Anthropic's thinking signatures and redacted
// thinking data, OpenAI's reasoning encrypted_content — as HMAC-SHA256
// with Key, so that any edit of the content (or of the value) is detected.
//
//   - thinking signature: base64(HMAC("thinking\x00" + text));
//   - redacted_thinking data: base64(text) "." base64(HMAC("redacted\x00" + text));
//   - encrypted_content: base64(header payload HMAC(header payload)), the
//     32-byte HMAC last; the header (0x80 and four zero bytes) makes it
//     start with "gAAAAA" as real (Fernet) values do.
//
// The zero value signs with DefaultKey. Safe for concurrent use.
type Signer struct {
	Key []byte
}

func (s Signer) mac(parts ...string) []byte {
	k := s.Key
	if len(k) == 0 {
		k = DefaultKey
	}
	m := hmac.New(sha256.New, k)
	for _, p := range parts {
		m.Write([]byte(p))
	}
	return m.Sum(nil)
}

// SignThinking returns the signature of a thinking block whose text is
// thinking.
func (s Signer) SignThinking(thinking string) string {
	return base64.StdEncoding.EncodeToString(s.mac("thinking\x00", thinking))
}

// VerifyThinking reports whether sig is the signature SignThinking issues
// for thinking.
func (s Signer) VerifyThinking(thinking, sig string) bool {
	got, err := base64.StdEncoding.DecodeString(sig)
	return err == nil && hmac.Equal(got, s.mac("thinking\x00", thinking))
}

// RedactedData returns the data field of a redacted_thinking block that
// hides text.
func (s Signer) RedactedData(text string) string {
	return base64.StdEncoding.EncodeToString([]byte(text)) + "." + base64.StdEncoding.EncodeToString(s.mac("redacted\x00", text))
}

// VerifyRedacted reports whether data was issued by RedactedData.
func (s Signer) VerifyRedacted(data string) bool {
	body, sig, ok := strings.Cut(data, ".")
	if !ok {
		return false
	}
	text, err1 := base64.StdEncoding.DecodeString(body)
	mac, err2 := base64.StdEncoding.DecodeString(sig)
	return err1 == nil && err2 == nil && hmac.Equal(mac, s.mac("redacted\x00", string(text)))
}

// Encrypt returns an encrypted_content value carrying payload (not really
// encrypted: base64 of a version byte, the payload and its HMAC).
func (s Signer) Encrypt(payload string) string {
	b := append([]byte(encryptedHeader), payload...)
	b = append(b, s.mac("encrypted\x00", string(b))...)
	return base64.StdEncoding.EncodeToString(b)
}

// Decrypt returns the payload of an encrypted_content value Encrypt
// issued, and whether it verifies.
func (s Signer) Decrypt(v string) (string, bool) {
	b, err := base64.StdEncoding.DecodeString(v)
	if err != nil || len(b) < len(encryptedHeader)+sha256.Size || string(b[:len(encryptedHeader)]) != encryptedHeader {
		return "", false
	}
	body, mac := b[:len(b)-sha256.Size], b[len(b)-sha256.Size:]
	if !hmac.Equal(mac, s.mac("encrypted\x00", string(body))) {
		return "", false
	}
	return string(bytes.Clone(body[len(encryptedHeader):])), true
}

const encryptedHeader = "\x80\x00\x00\x00\x00"

// RedactedText returns the text a redacted_thinking data value issued by
// RedactedData hides ("" when it does not decode).
func RedactedText(data string) string {
	body, _, _ := strings.Cut(data, ".")
	b, err := base64.StdEncoding.DecodeString(body)
	if err != nil {
		return ""
	}
	return string(b)
}
