package split

// A goes low; it uses B, which goes high: a tie up.
type A struct{ b *B }

func (a *A) M() { helper() }

// L's local helper is not the package's helper.
func (a *A) L() {
	helper := 1
	_ = helper
}
