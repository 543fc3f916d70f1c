package memory

import (
	"context"
	"strings"
	"testing"

	"github.com/condense-proxy/condense-proxy/cache"
	"github.com/condense-proxy/condense-proxy/condense"
)

// TestKeyLines: a step's key lines are what it established — a failing
// test and its message, an error, an edit, what the assistant decided —
// not the passing tests, stock phrases or code around them.
func TestKeyLines(t *testing.T) {
	lines := strings.Split(`[assistant]
Run the tests.
[tool call] bash({"command":"go test ./..."})
[tool result]
=== RUN   TestOther1
--- PASS: TestOther1 (0.00s)
--- FAIL: TestParseDuration_Case7 (0.01s)
    duration_test.go:40: got -58s, want 49s
panic: runtime error: index out of range
func Parse(in string) (string, error) {
[assistant]
I will change pkg/http/file7.go because the sign is dropped before the unit is parsed.
[tool call] edit_file({"path":"pkg/http/file7.go"})
The file pkg/http/file7.go has been edited.`, "\n")
	var got []string
	for _, i := range keyLines(lines) {
		got = append(got, lines[i])
	}
	want := []string{
		"--- FAIL: TestParseDuration_Case7 (0.01s)",
		"    duration_test.go:40: got -58s, want 49s",
		"panic: runtime error: index out of range",
		"I will change pkg/http/file7.go because the sign is dropped before the unit is parsed.",
		`[tool call] edit_file({"path":"pkg/http/file7.go"})`,
		"The file pkg/http/file7.go has been edited.",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("key lines:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestRelevantBlockCutsStepsWithoutKeyLines: a step that established
// nothing (no key line) and is larger than its share of the block is cut
// to the lines that match the focus, like a recall answer; a step with
// key lines is cut to them.
func TestRelevantBlockCutsStepsWithoutKeyLines(t *testing.T) {
	ctx := context.Background()
	m := New(cache.NewMemory(64<<20), Options{})
	long := strings.Repeat("filler words about nothing in particular\n", 400) + "the handler reads the quota setting from config.yaml\n"
	m.Add(ctx, "s", "c", []condense.MemoryItem{
		step("aaaa1111", "[tool result]\n--- FAIL: TestQuota (0.01s)\n    quota_test.go:88: limit 42 exceeded\n"+strings.Repeat("=== RUN TestOther\n", 300), 4, "win9"),
		step("bbbb2222", "[tool result]\n"+long, 6, "win9"),
	})
	block := m.Relevant(ctx, "s", "c", "quota handler config.yaml", 10, 2000, nil)
	for _, want := range []string{"limit 42 exceeded", "reads the quota setting from config.yaml"} {
		if !strings.Contains(block, want) {
			t.Errorf("block lacks %q:\n%s", want, block)
		}
	}
	if strings.Contains(block, "=== RUN") {
		t.Errorf("a step with key lines kept others:\n%s", block)
	}
}

// TestRelevantBlockSaysEachThingOnce: the block names each step by the
// start of its id (a recall by it returns the step), carries a step's key
// lines only, repeats no line the note's summaries say or an earlier step
// of the block said, and leaves out a step with nothing new.
func TestRelevantBlockSaysEachThingOnce(t *testing.T) {
	ctx := context.Background()
	m := New(cache.NewMemory(64<<20), Options{})
	const (
		a = "aaaa1111aaaa1111aaaa1111aaaa1111"
		b = "bbbb2222bbbb2222bbbb2222bbbb2222"
		c = "cccc3333cccc3333cccc3333cccc3333"
	)
	m.Add(ctx, "s", "c", []condense.MemoryItem{
		step(a, "[tool result]\n--- FAIL: TestQuota (0.01s)\n    quota_test.go:88: limit 42 exceeded\n=== RUN TestOther", 2, "sum1"),
		step(b, "[tool result]\n--- FAIL: TestQuota (0.01s)\n    quota_test.go:91: limit 43 exceeded", 4, "sum1"),
		step(c, "[tool result]\n--- FAIL: TestQuotaReset (0.01s)\n    quota_test.go:12: reset took 9s", 6, "sum1"),
	})
	block := m.RelevantContext(ctx, condense.RelevantQuery{Scope: "s", Conversation: "c", Focus: "quota limit exceeded reset",
		Before: 10, Budget: 2000, Known: "<summary>\n- --- FAIL: TestQuotaReset (0.01s)\n- quota_test.go:12: reset took 9s\n</summary>"})
	for _, want := range []string{"[step aaaa1111aaaa]", "[step bbbb2222bbbb]", "limit 42 exceeded", "limit 43 exceeded"} {
		if !strings.Contains(block, want) {
			t.Errorf("block lacks %q:\n%s", want, block)
		}
	}
	if n := strings.Count(block, "--- FAIL: TestQuota (0.01s)"); n != 1 {
		t.Errorf("a line said %d times:\n%s", n, block)
	}
	for _, no := range []string{"cccc3333", "TestQuotaReset", "=== RUN", a} {
		if strings.Contains(block, no) {
			t.Errorf("block has %q:\n%s", no, block)
		}
	}
	// The short id recalls the step; a start two steps share does not.
	if r := m.Recall(ctx, "s", "c", `{"id":"aaaa1111aaaa"}`, 2000, nil); r.Outcome != OutcomeFound || len(r.Items) != 1 || r.Items[0] != a {
		t.Errorf("recall by the short id: %+v", r)
	}
	m.Add(ctx, "s", "c", []condense.MemoryItem{step("aaaa1111aaaa9999aaaa1111aaaa1111", "[tool result]\nok", 8, "sum2")})
	if r := m.Recall(ctx, "s", "c", `{"id":"aaaa1111aaaa"}`, 2000, nil); r.Outcome != OutcomeUnknown {
		t.Errorf("a start two steps share: %+v", r)
	}
}

// TestRelevantBlockKeepsTheDecision: of a step that edited a file, the
// block carries what the assistant decided and why (the file and the
// reason), not the edit's call or "has been edited" for the same file
// instead — however much of the focus those share — so the decision
// fits the step's share and the step costs less of the block.
func TestRelevantBlockKeepsTheDecision(t *testing.T) {
	ctx := context.Background()
	m := New(cache.NewMemory(64<<20), Options{})
	const a = "aaaa1111aaaa1111aaaa1111aaaa1111"
	m.Add(ctx, "s", "c", []condense.MemoryItem{
		step(a, `[assistant]
I will change pkg/cache/file31.go because the sign is dropped before the unit is parsed (decision 45).
[tool call] edit_file({"new_str":"return -d","old_str":"return d","path":"pkg/cache/file31.go"})
[tool result]
The file pkg/cache/file31.go has been edited.`, 2, "sum1"),
	})
	focus := `edit_file {"new_str":"return -d","old_str":"return d","path":"pkg/cache/file7.go"}` + "\n" + `read_file {"path":"pkg/cache/file31.go"}`
	block := m.RelevantContext(ctx, condense.RelevantQuery{Scope: "s", Conversation: "c", Focus: focus, Before: 10, Budget: 2000})
	if !strings.Contains(block, "because the sign is dropped before the unit is parsed (decision 45).") {
		t.Errorf("block lacks the decision:\n%s", block)
	}
	for _, no := range []string{"[tool call]", "has been edited"} {
		if strings.Contains(block, no) {
			t.Errorf("block has %q, for a file its decision names:\n%s", no, block)
		}
	}
}
