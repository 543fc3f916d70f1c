package config

import (
	"strings"
	"testing"
)

func TestSummaryAPI(t *testing.T) {
	c, err := Load(nil, withUpstream())
	if err != nil || c.Condense.SummaryAPI != "auto" {
		t.Fatalf("default %q %v", c.Condense.SummaryAPI, err)
	}
	c, err = Load(flags(t, "--config", writeFile(t, "condense:\n  summary_api: responses\n")), withUpstream())
	if err != nil || c.Condense.SummaryAPI != "responses" {
		t.Fatalf("file: %q %v", c.Condense.SummaryAPI, err)
	}
	c, err = Load(nil, withUpstream("CONDENSE_CONDENSE_SUMMARY_API=chat"))
	if err != nil || c.Condense.SummaryAPI != "chat" {
		t.Fatalf("env: %q %v", c.Condense.SummaryAPI, err)
	}
	c, err = Load(flags(t, "--summary-api", "messages"), withUpstream())
	if err != nil || c.Condense.SummaryAPI != "messages" {
		t.Fatalf("flag: %q %v", c.Condense.SummaryAPI, err)
	}
	if _, err := Load(flags(t, "--summary-api", "grpc"), withUpstream()); err == nil || !strings.Contains(err.Error(), "condense.summary_api") {
		t.Fatalf("bad value: %v", err)
	}
}
