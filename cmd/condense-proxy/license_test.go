package main

import (
	"crypto/sha256"
	"fmt"
	"os"
	"strings"
	"testing"
)

// TestLicense: the repository carries the Apache License 2.0, whole (its
// text as the Apache Software Foundation publishes it, the appendix's
// copyright line filled in for the project).
func TestLicense(t *testing.T) {
	raw, err := os.ReadFile("../../LICENSE")
	if err != nil {
		t.Fatal(err)
	}
	text := string(raw)
	const owner = "   Copyright 2026 The condense-proxy authors\n"
	if !strings.Contains(text, owner) {
		t.Fatalf("LICENSE lacks %q", strings.TrimSpace(owner))
	}
	// The canonical text's SHA-256, with the appendix's placeholder.
	canonical := strings.Replace(text, owner, "   Copyright [yyyy] [name of copyright owner]\n", 1)
	const want = "cfc7749b96f63bd31c3c42b5c471bf756814053e847c10f3eb003417bc523d30"
	if got := fmt.Sprintf("%x", sha256.Sum256([]byte(canonical))); got != want {
		t.Errorf("LICENSE is not the Apache License 2.0's text: sha256 %s, want %s", got, want)
	}
	for _, part := range []string{"Apache License", "Version 2.0, January 2004", "TERMS AND CONDITIONS FOR USE, REPRODUCTION, AND DISTRIBUTION", "END OF TERMS AND CONDITIONS", "APPENDIX: How to apply the Apache License to your work."} {
		if !strings.Contains(text, part) {
			t.Errorf("LICENSE lacks %q", part)
		}
	}
}
