// Package race tells a test whether the race detector is on. The property tests that compare
// two code paths over thousands of generated inputs run 10 to 25 times slower under it: with it
// on they take a sample that still reaches every family and every kind of input, and make
// test runs them in full a second time without it (see the Makefile).
package race

// Rounds returns n, or n/k (at least 1) under the race detector: the number of rounds of a
// property test.
func Rounds(n, k int) int {
	if !Enabled || n <= k {
		return n
	}
	return n / k
}

// Sample reports whether case i of a property test runs: every case without the race detector,
// every k-th under it.
func Sample(i, k int) bool { return !Enabled || i%k == 0 }
