package eval

import (
	"context"
	"testing"

	"github.com/condense-proxy/condense-proxy/internal/redistest"
	"github.com/condense-proxy/condense-proxy/internal/testenv"
)

// TestReplicasBillAsOne: a session replayed through two proxies that share
// only the cache, the requests handed to them in turn, bills what one
// proxy bills, keeps the same prefix and the same facts — in memory and in
// Redis, each replica with its memory layer in front of it, as deployed.
// (Replicas that share nothing bill more than twice as much here: each
// condenses the conversation afresh.)
func TestReplicasBillAsOne(t *testing.T) {
	if testenv.Unraced(t) {
		return // deterministic replays: their numbers, without the race detector
	}
	var modes []Mode
	for _, m := range Modes {
		if m.Name == "selective" || m.Name == "auto" || m.Name == "full-llm" {
			modes = append(modes, m)
		}
	}
	sources := []Source{{Spec: "synthetic:7:150000", Window: 16000}, {Spec: "synthetic:7:150000", Window: 16000, Format: "responses"}}
	run := func(replicas int, redis string) []Row {
		rep, err := Run(context.Background(), Config{Sources: sources, Modes: modes, SummaryTokens: 1000, FaithfulSummaries: true,
			Threshold: 0.75, Replicas: replicas, Redis: redis, ColdModes: []string{}})
		if err != nil {
			t.Fatal(err)
		}
		return rep.Rows
	}
	one := run(1, "")
	srv := redistest.Start(t)
	for _, c := range []struct {
		name  string
		redis string
	}{{"memory", ""}, {"redis", srv.URL()}} {
		two := run(2, c.redis)
		if len(two) != len(one) {
			t.Fatalf("%s: %d rows, one replica %d", c.name, len(two), len(one))
		}
		for i, r := range two {
			o := one[i]
			if o.Condensed == 0 {
				t.Fatalf("%s %s: nothing condensed, the replay tests nothing", o.Session, o.Mode)
			}
			if r.Bill() != o.Bill() || r.PrefixStability != o.PrefixStability || r.FactsKept != o.FactsKept || r.TokensForwarded != o.TokensForwarded {
				t.Errorf("%s, two replicas, %s %s %s: bill %.4f prefix %.4f facts %d forwarded %d; one replica %.4f %.4f %d %d",
					c.name, o.Session, o.Format, o.Mode, r.Bill(), r.PrefixStability, r.FactsKept, r.TokensForwarded,
					o.Bill(), o.PrefixStability, o.FactsKept, o.TokensForwarded)
			}
		}
	}
}
