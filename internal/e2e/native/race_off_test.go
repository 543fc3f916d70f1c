//go:build !race

package native_test

const raceOn = false
