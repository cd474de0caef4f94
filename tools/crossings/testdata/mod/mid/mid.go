// Package mid hands values down to low.
package mid

import "example.com/mod/low"

// S is handed down as a low.Scanner.
type S struct{}

func (S) Next() {}

// U's method is handed down as a func value (a bound method).
type U struct{}

func (U) Do() {}

func F() {
	low.Run(func() { helper() })
	low.Run(U{}.Do)
}

func G() {
	low.Each(S{})
	_ = low.Retry(func() int { return 1 })
	_ = low.Retry(func() string { return "" })
}

func helper() {}
