package main

import (
	"bufio"
	"cmp"
	"errors"
	"flag"
	"fmt"
	"go/ast"
	"go/types"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/tools/go/packages"
)

// defaultOrder is the package order of the migrate split (docs: design of the split, the
// import graph): floors from the bottom, ";" between floors, "," between the packages of one
// floor. The package being split is above them all.
const defaultOrder = "fleet;source,target,strimzi;hazard;plan;apply;cutover;rollback"

// Decl is a top-level declaration of the package being split: a function, a type, a var or a
// const, or a method as "Type.Method".
type Decl struct {
	Name string
	File string // base name of its file
	To   string // the package the map sends it to
}

// Tie is a use of one declaration by another that the map sends to different packages.
type Tie struct {
	From, To Decl
	// Kind is Up (To's package is above From's), Side (on the same floor), or "receiver": a
	// method the map sends away from its type, which Go does not allow at all.
	Kind Direction
}

const Receiver Direction = "receiver"

func runTies(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("ties", flag.ContinueOnError)
	mapFile := fs.String("map", "", "the split: lines DECL<TAB>PACKAGE, DECL a file (x.go: its declarations), a declaration (Name, Type.Method) or '#' comment; a declaration listed goes by its own line, the others by their file's, a file not listed stays")
	order := fs.String("order", defaultOrder, "the packages' floors, bottom first: ';' between floors, ',' within one")
	verbose := fs.Bool("v", true, "list each tie")
	fs.SetOutput(out)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *mapFile == "" || fs.NArg() != 1 {
		return errors.New("usage: ties -map MAP [-order FLOORS] DIR")
	}
	m, err := readMap(*mapFile)
	if err != nil {
		return err
	}
	ties, err := Ties(fs.Arg(0), m, *order)
	if err != nil {
		return err
	}
	writeTies(out, ties, *verbose)
	return nil
}

// readMap reads a split map: KEY<TAB>PACKAGE per line.
func readMap(path string) (map[string]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	m := map[string]string{}
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fields := strings.Fields(line)
		if len(fields) != 2 {
			return nil, fmt.Errorf("%s:%d: want DECL<TAB>PACKAGE, got %q", path, n, line)
		}
		if prev, ok := m[fields[0]]; ok && prev != fields[1] {
			return nil, fmt.Errorf("%s:%d: %s is mapped twice (%s, %s)", path, n, fields[0], prev, fields[1])
		}
		m[fields[0]] = fields[1]
	}
	return m, sc.Err()
}

// floors reads an order: the floor of each package, from 1.
func floors(order string) map[string]int {
	fl := map[string]int{}
	for i, floor := range strings.Split(order, ";") {
		for p := range strings.SplitSeq(floor, ",") {
			if p = strings.TrimSpace(p); p != "" {
				fl[p] = i + 1
			}
		}
	}
	return fl
}

// Ties loads the package in dir (its non-test files) and lists the uses between its
// declarations that the split m would make run against order: to a package above, or beside.
func Ties(dir string, m map[string]string, order string) ([]Tie, error) {
	pkgs, _, err := load(packages.NeedName|packages.NeedFiles|packages.NeedSyntax|packages.NeedTypes|packages.NeedTypesInfo, dir)
	if err != nil {
		return nil, err
	}
	if len(pkgs) != 1 {
		return nil, fmt.Errorf("%s: want one package, got %d", dir, len(pkgs))
	}
	p := pkgs[0]
	fl := floors(order)
	fl[p.Name] = len(fl) + 1 // the package split stays on top

	decls := map[types.Object]*Decl{} // every object a top-level declaration defines, fields and interface methods included
	var all []*Decl
	used := map[string]bool{}
	target := func(name, file string) string {
		if to, ok := m[name]; ok {
			used[name] = true
			return to
		}
		if to, ok := m[file]; ok {
			used[file] = true
			return to
		}
		return p.Name
	}
	type body struct {
		decl *Decl
		node ast.Node
	}
	var bodies []body
	for _, f := range p.Syntax {
		file := filepath.Base(p.Fset.Position(f.Pos()).Filename)
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				n := d.Name.Name
				if d.Recv != nil && len(d.Recv.List) == 1 {
					n = receiverName(d.Recv.List[0].Type) + "." + n
				}
				if n == "init" || n == "_" {
					n = fmt.Sprintf("%s@%s:%d", n, file, p.Fset.Position(d.Pos()).Line)
				}
				decl := &Decl{Name: n, File: file, To: target(n, file)}
				all = append(all, decl)
				if obj := p.TypesInfo.Defs[d.Name]; obj != nil {
					decls[obj] = decl
				}
				bodies = append(bodies, body{decl, d})
			case *ast.GenDecl:
				for _, s := range d.Specs {
					var names []*ast.Ident
					switch s := s.(type) {
					case *ast.TypeSpec:
						names = []*ast.Ident{s.Name}
					case *ast.ValueSpec:
						names = s.Names
					}
					for _, id := range names {
						if id.Name == "_" {
							continue
						}
						decl := &Decl{Name: id.Name, File: file, To: target(id.Name, file)}
						all = append(all, decl)
						if obj := p.TypesInfo.Defs[id]; obj != nil {
							decls[obj] = decl
						}
						bodies = append(bodies, body{decl, s})
					}
					if ts, ok := s.(*ast.TypeSpec); ok { // its fields and interface methods are its own
						decl := decls[p.TypesInfo.Defs[ts.Name]]
						ast.Inspect(ts.Type, func(n ast.Node) bool {
							if f, ok := n.(*ast.Field); ok {
								for _, id := range f.Names {
									if obj := p.TypesInfo.Defs[id]; obj != nil {
										decls[obj] = decl
									}
								}
								if len(f.Names) == 0 { // embedded: the field's object is recorded on its type's identifier
									if id := embeddedIdent(f.Type); id != nil {
										if obj, ok := p.TypesInfo.Defs[id]; ok && obj != nil {
											decls[obj] = decl
										}
									}
								}
							}
							return true
						})
					}
				}
			}
		}
	}
	var unknown []string
	for k := range m {
		if !used[k] && !slices.ContainsFunc(all, func(d *Decl) bool { return d.File == k || d.Name == k }) {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		slices.Sort(unknown)
		return nil, fmt.Errorf("the map names what %s does not declare: %s", dir, strings.Join(unknown, ", "))
	}
	for _, d := range all {
		if _, ok := fl[d.To]; !ok {
			return nil, fmt.Errorf("the map sends %s to %s, which the order does not place", d.Name, d.To)
		}
	}

	seen := map[[2]*Decl]bool{}
	var ties []Tie
	add := func(from, to *Decl, kind Direction) {
		if !seen[[2]*Decl{from, to}] {
			seen[[2]*Decl{from, to}] = true
			ties = append(ties, Tie{From: *from, To: *to, Kind: kind})
		}
	}
	for _, b := range bodies {
		ast.Inspect(b.node, func(n ast.Node) bool {
			id, ok := n.(*ast.Ident)
			if !ok {
				return true
			}
			obj := p.TypesInfo.Uses[id]
			if obj == nil {
				return true
			}
			if fn, ok := obj.(*types.Func); ok && fn.Origin() != nil {
				obj = fn.Origin()
			}
			if v, ok := obj.(*types.Var); ok && v.Origin() != nil {
				obj = v.Origin()
			}
			to := decls[obj]
			if to == nil || to == b.decl || to.To == b.decl.To {
				return true
			}
			if strings.Contains(b.decl.Name, ".") && strings.HasPrefix(b.decl.Name, to.Name+".") {
				add(b.decl, to, Receiver) // a method away from its type
				return true
			}
			switch from, dest := fl[b.decl.To], fl[to.To]; {
			case dest > from:
				add(b.decl, to, Up)
			case dest == from:
				add(b.decl, to, Side)
			}
			return true
		})
	}
	slices.SortFunc(ties, func(a, b Tie) int {
		return cmp.Or(cmp.Compare(a.From.File, b.From.File), cmp.Compare(a.To.File, b.To.File),
			cmp.Compare(a.From.Name, b.From.Name), cmp.Compare(a.To.Name, b.To.Name))
	})
	return ties, nil
}

// receiverName is the name of a method's receiver type: T for T, *T, T[K], *T[K].
func receiverName(e ast.Expr) string {
	for {
		switch t := e.(type) {
		case *ast.StarExpr:
			e = t.X
		case *ast.IndexExpr:
			e = t.X
		case *ast.IndexListExpr:
			e = t.X
		case *ast.ParenExpr:
			e = t.X
		case *ast.Ident:
			return t.Name
		default:
			return "?"
		}
	}
}

// embeddedIdent is the identifier that names an embedded field (T, *T, pkg.T, T[K]).
func embeddedIdent(e ast.Expr) *ast.Ident {
	for {
		switch t := e.(type) {
		case *ast.StarExpr:
			e = t.X
		case *ast.IndexExpr:
			e = t.X
		case *ast.IndexListExpr:
			e = t.X
		case *ast.SelectorExpr:
			return t.Sel
		case *ast.Ident:
			return t
		default:
			return nil
		}
	}
}

func writeTies(out io.Writer, ties []Tie, verbose bool) {
	pairs := 0
	n := map[Direction]int{}
	for i, t := range ties {
		n[t.Kind]++
		if i == 0 || ties[i-1].From.File != t.From.File || ties[i-1].To.File != t.To.File {
			pairs++
			if verbose {
				fmt.Fprintf(out, "%s (%s) -> %s (%s)\n", t.From.File, t.From.To, t.To.File, t.To.To)
			}
		}
		if verbose {
			fmt.Fprintf(out, "  %-8s %s -> %s\n", t.Kind, t.From.Name, t.To.Name)
		}
	}
	fmt.Fprintf(out, "%d ties in %d file pairs: %d up, %d side, %d methods away from their type\n", len(ties), pairs, n[Up], n[Side], n[Receiver])
}
