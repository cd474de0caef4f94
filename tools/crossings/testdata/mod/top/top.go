// Package top is where the walk starts.
package top

import (
	"example.com/mod/mid"
	"example.com/mod/other"
)

type T struct{}

func (*T) Root() {
	mid.F()
	mid.G()
	other.Call(mid.S{})
}

// Unreached is never called from Root.
func Unreached() { mid.F() }
