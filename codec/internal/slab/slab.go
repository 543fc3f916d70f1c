// Package slab hands out the small slices a parse makes per item (an
// item's calls, answers, outputs) from a few shared blocks, so that
// parsing a request allocates per block rather than per item.
package slab

// Slab copies slices of T into shared blocks.
type Slab[T any] struct {
	free []T
}

// blockLen is the least number of elements a block holds.
const blockLen = 256

// Copy returns a copy of v in the slab (nil for an empty v). Its capacity
// is its length: an append to it allocates, never writes over another
// item's elements.
func (s *Slab[T]) Copy(v []T) []T {
	if len(v) == 0 {
		return nil
	}
	if cap(s.free)-len(s.free) < len(v) {
		s.free = make([]T, 0, max(blockLen, len(v)))
	}
	n := len(s.free)
	s.free = append(s.free, v...)
	return s.free[n:len(s.free):len(s.free)]
}

// One returns a slice holding v alone, as Copy.
func (s *Slab[T]) One(v T) []T {
	if cap(s.free) == len(s.free) {
		s.free = make([]T, 0, blockLen)
	}
	s.free = append(s.free, v)
	n := len(s.free)
	return s.free[n-1 : n : n]
}
