package fakesign

import (
	"strings"
	"testing"
)

func TestSigner(t *testing.T) {
	s, other := Signer{}, Signer{Key: []byte("another key")}
	sig := s.SignThinking("plan")
	if !s.VerifyThinking("plan", sig) || s.VerifyThinking("plan.", sig) || other.VerifyThinking("plan", sig) || s.VerifyThinking("plan", sig+"x") {
		t.Error("thinking signature checks")
	}
	d := s.RedactedData("hidden")
	if !s.VerifyRedacted(d) || other.VerifyRedacted(d) || s.VerifyRedacted(strings.Replace(d, "a", "b", 1)) || RedactedText(d) != "hidden" {
		t.Error("redacted data checks")
	}
	ec := s.Encrypt("reasoning")
	if !strings.HasPrefix(ec, "gA") {
		t.Errorf("encrypted content %q does not look like a real one", ec)
	}
	if p, ok := s.Decrypt(ec); !ok || p != "reasoning" {
		t.Errorf("Decrypt = %q, %v", p, ok)
	}
	if _, ok := other.Decrypt(ec); ok {
		t.Error("another key decrypts")
	}
	if _, ok := s.Decrypt(ec[:len(ec)-4] + "AAA="); ok {
		t.Error("edited content decrypts")
	}
}
