// Command crossings measures how the module's packages lean on each other, with the Go
// toolchain's own analyses (golang.org/x/tools: go/packages, SSA, VTA), so that a figure in a
// design or a review is one command away from being made again. It is a module of its own:
// the product's go.mod gains nothing from it, and `make test` does not run it.
//
// Three reports, each reading the source of the product module that holds its directory
// arguments:
//
//   - paths: the package crossings of a call path. The static call graph of the loaded
//     program (SSA, VTA seeded with CHA), restricted to the functions of the package -within
//     and of the module's packages it imports, is walked breadth first from -root. A crossing
//     is a distinct call edge (caller, callee) between two packages: down when the caller's
//     package imports the callee's (directly or not), back up when the callee's package
//     imports the caller's (the lower package calls a func value or an interface it was
//     handed), side when neither imports the other. `make crossings` runs it from the agent's
//     (*Agent).process: the path of a request, consume to result.
//   - ties: the declarations of one package that would tie its parts together if it were
//     split as a map says: a declaration that uses another one bound for a package that its
//     own package may not import (a package above it, or beside it, in -order). It works on
//     go/types objects, so two unexported names that happen to be spelled alike are not a tie.
//   - flagtext: the string literals of the packages that name a flag registered by a command
//     (by default ./cmd/offsetagent), and the other "--words" beside them: what a library
//     says in a command's words.
//
// Run it from this folder: `go run . paths -root ... -within ... ../../cmd/offsetagent`.
package main

import (
	"fmt"
	"io"
	"os"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// commands are the reports, by the word that names them on the command line.
var commands = map[string]func(args []string, out io.Writer) error{
	"paths":    runPaths,
	"ties":     runTies,
	"flagtext": runFlagText,
}

func run(args []string, out, errOut io.Writer) int {
	if len(args) == 0 || commands[args[0]] == nil {
		fmt.Fprintln(errOut, "usage: crossings paths|ties|flagtext [flags] DIR...  (crossings REPORT -h for its flags)")
		return 2
	}
	if err := commands[args[0]](args[1:], out); err != nil {
		fmt.Fprintf(errOut, "crossings %s: %v\n", args[0], err)
		return 1
	}
	return 0
}
