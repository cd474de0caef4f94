package split

type B struct{}

func helper() {}

// N uses A (low): down, no tie.
func (b *B) N() {
	var a A
	_ = a.b
}

// Up stays in the package split, above both.
func Up() { (&B{}).N() }
