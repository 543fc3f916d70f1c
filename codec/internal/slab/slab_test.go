package slab

import "testing"

// TestCopiesDoNotShare: appending to one copy never changes another.
func TestCopiesDoNotShare(t *testing.T) {
	var s Slab[int]
	a := s.Copy([]int{1, 2})
	b := s.One(3)
	c := s.Copy(make([]int, 300))
	a = append(a, 9)
	if b[0] != 3 || len(c) != 300 || a[2] != 9 || s.Copy(nil) != nil {
		t.Fatalf("a %v b %v len(c) %d", a, b, len(c))
	}
}
