// Command tool registers flags.
package main

import (
	"flag"

	"example.com/mod/top"
)

const three = "three"

func main() {
	fs := flag.NewFlagSet("tool", flag.ExitOnError)
	_ = fs.String("name-one", "", "")
	var b bool
	flag.BoolVar(&b, "two", false, "")
	fs.Var(nil, three, "")
	(&top.T{}).Root()
}
