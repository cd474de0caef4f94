package main

import (
	"cmp"
	"errors"
	"flag"
	"fmt"
	"go/types"
	"io"
	"slices"
	"strings"

	"golang.org/x/tools/go/callgraph"
	"golang.org/x/tools/go/callgraph/cha"
	"golang.org/x/tools/go/callgraph/vta"
	"golang.org/x/tools/go/packages"
	"golang.org/x/tools/go/ssa"
	"golang.org/x/tools/go/ssa/ssautil"
)

// Direction is how a crossing runs against the import graph.
type Direction string

const (
	Down Direction = "down" // the caller's package imports the callee's
	Up   Direction = "up"   // the callee's package imports the caller's: a value handed down is called back
	Side Direction = "side" // neither imports the other (an interface of a third package)
)

// Crossing is one call edge between two packages.
type Crossing struct {
	Caller, Callee string // functions, as SSA spells them (instances as their generic function)
	From, To       string // their packages' paths
	Direction      Direction
}

// Walk is what paths found.
type Walk struct {
	Module    string
	Reached   int // functions reached from the root within the bound
	Crossings []Crossing
}

func runPaths(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("paths", flag.ContinueOnError)
	root := fs.String("root", "", "the function the walk starts from, as SSA spells it: (*PKG.Type).method or PKG.Func (required)")
	within := fs.String("within", "", "the package path that bounds the walk: it and the packages of its module it imports (required)")
	verbose := fs.Bool("v", false, "list each crossing under its package pair")
	fs.SetOutput(out)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *root == "" || *within == "" || fs.NArg() == 0 {
		return errors.New("usage: paths -root FUNC -within PKG [-v] DIR...")
	}
	w, err := Paths(*root, *within, fs.Args()...)
	if err != nil {
		return err
	}
	w.write(out, *verbose)
	return nil
}

// Paths loads the program of dirs and walks its call graph from the function root, within the
// package within and the packages of its module it imports.
func Paths(root, within string, dirs ...string) (*Walk, error) {
	pkgs, _, err := load(packages.LoadAllSyntax|packages.NeedModule, dirs...)
	if err != nil {
		return nil, err
	}
	module := ""
	imports := map[string][]string{}
	packages.Visit(pkgs, nil, func(p *packages.Package) {
		for path := range p.Imports {
			imports[p.PkgPath] = append(imports[p.PkgPath], path)
		}
		if p.PkgPath == within && p.Module != nil {
			module = p.Module.Path
		}
	})
	if module == "" {
		return nil, fmt.Errorf("package %s is not in the loaded program (or in no module)", within)
	}
	g := &importGraph{imports: imports, memo: map[[2]string]bool{}}
	bound := map[string]bool{within: true}
	for _, p := range g.closure(within) {
		if p == module || strings.HasPrefix(p, module+"/") {
			bound[p] = true
		}
	}

	prog, _ := ssautil.AllPackages(pkgs, ssa.InstantiateGenerics)
	prog.Build()
	all := ssautil.AllFunctions(prog)
	var start *ssa.Function
	for fn := range all {
		if fn.String() == root {
			start = fn
			break
		}
	}
	if start == nil {
		return nil, fmt.Errorf("function %s is not in the loaded program", root)
	}
	cg := vta.CallGraph(all, cha.CallGraph(prog))

	w := &Walk{Module: module}
	inBound := func(fn *ssa.Function) bool {
		p := packageOf(fn)
		return p != nil && bound[p.Path()]
	}
	seen := map[*ssa.Function]bool{start: true}
	edges := map[[2]string]bool{}
	for queue := []*ssa.Function{start}; len(queue) > 0; queue = queue[1:] {
		fn := queue[0]
		w.Reached++
		for _, callee := range callees(cg, fn, inBound) {
			from, to := packageOf(fn).Path(), packageOf(callee).Path()
			if from != to {
				key := [2]string{name(fn), name(callee)}
				if !edges[key] {
					edges[key] = true
					w.Crossings = append(w.Crossings, Crossing{Caller: key[0], Callee: key[1], From: from, To: to, Direction: g.direction(from, to)})
				}
			}
			if !seen[callee] {
				seen[callee] = true
				queue = append(queue, callee)
			}
		}
	}
	slices.SortFunc(w.Crossings, func(a, b Crossing) int {
		return cmp.Or(cmp.Compare(a.From, b.From), cmp.Compare(a.To, b.To), cmp.Compare(a.Caller, b.Caller), cmp.Compare(a.Callee, b.Callee))
	})
	return w, nil
}

// callees are the functions within the bound that fn calls. A synthetic function of no
// package (a method wrapper, a thunk, a bound method's closure) is looked through: its
// callees are fn's.
func callees(cg *callgraph.Graph, fn *ssa.Function, inBound func(*ssa.Function) bool) []*ssa.Function {
	var out []*ssa.Function
	seen := map[*ssa.Function]bool{fn: true}
	var visit func(*ssa.Function)
	visit = func(f *ssa.Function) {
		node := cg.Nodes[f]
		if node == nil {
			return
		}
		for _, e := range node.Out {
			c := e.Callee.Func
			if seen[c] {
				continue
			}
			seen[c] = true
			switch {
			case inBound(c):
				out = append(out, c)
			case packageOf(c) == nil:
				visit(c)
			}
		}
	}
	visit(fn)
	return out
}

// packageOf is the package whose source declares fn (an instance's generic function's, an
// anonymous function's enclosing one's), nil for a synthetic function of no package.
func packageOf(fn *ssa.Function) *types.Package {
	for fn.Parent() != nil && fn.Pkg == nil {
		fn = fn.Parent()
	}
	if o := fn.Origin(); o != nil {
		fn = o
	}
	if fn.Pkg == nil {
		return nil
	}
	return fn.Pkg.Pkg
}

// name is fn as SSA spells it, an instance of a generic function (and the anonymous functions
// in it) as its generic one: the instances of one function in the source are one edge.
func name(fn *ssa.Function) string {
	if p := fn.Parent(); p != nil {
		return name(p) + strings.TrimPrefix(fn.Name(), p.Name())
	}
	if o := fn.Origin(); o != nil {
		return o.String()
	}
	return fn.String()
}

// importGraph answers whether one package imports another, directly or not.
type importGraph struct {
	imports map[string][]string
	memo    map[[2]string]bool
}

// closure is every package path imports reaches from p, p excluded.
func (g *importGraph) closure(p string) []string {
	seen := map[string]bool{p: true}
	var out []string
	for queue := []string{p}; len(queue) > 0; queue = queue[1:] {
		for _, q := range g.imports[queue[0]] {
			if !seen[q] {
				seen[q] = true
				out = append(out, q)
				queue = append(queue, q)
			}
		}
	}
	return out
}

func (g *importGraph) reaches(from, to string) bool {
	key := [2]string{from, to}
	if r, ok := g.memo[key]; ok {
		return r
	}
	r := slices.Contains(g.closure(from), to)
	g.memo[key] = r
	return r
}

func (g *importGraph) direction(from, to string) Direction {
	switch {
	case g.reaches(from, to):
		return Down
	case g.reaches(to, from):
		return Up
	default:
		return Side
	}
}

// Count is the number of crossings per direction.
func (w *Walk) Count() map[Direction]int {
	n := map[Direction]int{}
	for _, c := range w.Crossings {
		n[c.Direction]++
	}
	return n
}

func (w *Walk) write(out io.Writer, verbose bool) {
	short := func(p string) string {
		if s, ok := strings.CutPrefix(p, w.Module+"/"); ok {
			return s
		}
		return p
	}
	fmt.Fprintf(out, "%d functions reached\n", w.Reached)
	for i := 0; i < len(w.Crossings); {
		c := w.Crossings[i]
		j := i
		for j < len(w.Crossings) && w.Crossings[j].From == c.From && w.Crossings[j].To == c.To {
			j++
		}
		fmt.Fprintf(out, "%-5s %4d  %s -> %s\n", c.Direction, j-i, short(c.From), short(c.To))
		if verbose {
			for _, e := range w.Crossings[i:j] {
				fmt.Fprintf(out, "            %s -> %s\n", strings.ReplaceAll(e.Caller, w.Module+"/", ""), strings.ReplaceAll(e.Callee, w.Module+"/", ""))
			}
		}
		i = j
	}
	n := w.Count()
	fmt.Fprintf(out, "%d crossings: %d down, %d back up, %d side\n", len(w.Crossings), n[Down], n[Up], n[Side])
}
