package tokenizer

import (
	"testing"
)

func TestCheckItems(t *testing.T) {
	c := New(Options{MaxMessages: 2})
	if err := c.CheckItems(2); err != nil {
		t.Fatal(err)
	}
	if err := c.CheckItems(3); err == nil {
		t.Fatal("3 items over a limit of 2 accepted")
	}
}
