// Package low is the bottom of the test program: it runs what it is handed.
package low

// Scanner is a value a caller hands down.
type Scanner interface{ Next() }

// Run calls f: a loop calling the body it was given.
func Run(f func()) { f() }

// Each calls s.
func Each(s Scanner) { s.Next() }

// Retry is generic: its instances are one function.
func Retry[T any](f func() T) T { return f() }
