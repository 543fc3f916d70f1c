package config

import (
	"strings"
	"testing"
)

// TestStandIns: condense.stand_ins is summaries by default, takes notes,
// refuses anything else, and refuses notes without the recall tool they
// leave the rest to.
func TestStandIns(t *testing.T) {
	c, err := Load(nil, withUpstream())
	if err != nil || c.Condense.StandIns != "summaries" {
		t.Fatalf("default %q %v", c.Condense.StandIns, err)
	}
	c, err = Load(flags(t, "--stand-ins", "notes"), withUpstream())
	if err != nil || c.Condense.StandIns != "notes" {
		t.Fatalf("flag: %q %v", c.Condense.StandIns, err)
	}
	if _, err := Load(flags(t, "--stand-ins", "nothing"), withUpstream()); err == nil || !strings.Contains(err.Error(), "condense.stand_ins") {
		t.Fatalf("bad value: %v", err)
	}
	_, err = Load(flags(t, "--config", writeFile(t, "condense:\n  stand_ins: notes\nmemory:\n  recall_tool: false\n")), withUpstream())
	if err == nil || !strings.Contains(err.Error(), "memory.recall_tool") {
		t.Fatalf("notes without the recall tool: %v", err)
	}
}
