//go:build race

package native_test

// raceOn is true under -race, where the replays run ~9 times slower: the
// native replays sample harder to stay within the package's time.
const raceOn = true
