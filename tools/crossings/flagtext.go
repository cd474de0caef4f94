package main

import (
	"cmp"
	"errors"
	"flag"
	"fmt"
	"go/ast"
	"go/constant"
	"go/token"
	"go/types"
	"io"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/tools/go/packages"
)

// Literal is a string literal that holds "--word"s.
type Literal struct {
	Pos   token.Position
	Flags []string // the words that name a registered flag, in order, without "--"
	Other []string // the other words
}

// FlagText is what flagtext found.
type FlagText struct {
	Registered map[string]bool
	Literals   []Literal
}

// dashWord is "--word" at the start of a word: not inside another one ("a--b").
var dashWord = regexp.MustCompile(`(?:^|[^A-Za-z0-9_-])--([a-z][a-z0-9]*(?:-[a-z0-9]+)*)`)

// flagSetNameArg is the index of the flag's name among the arguments of flag's functions and
// of *flag.FlagSet's methods that register one.
var flagSetNameArg = map[string]int{
	"Bool": 0, "Duration": 0, "Float64": 0, "Int": 0, "Int64": 0, "String": 0, "Uint": 0, "Uint64": 0, "Func": 0, "BoolFunc": 0,
	"BoolVar": 1, "DurationVar": 1, "Float64Var": 1, "IntVar": 1, "Int64Var": 1, "StringVar": 1, "UintVar": 1, "Uint64Var": 1, "Var": 1, "TextVar": 1,
}

func runFlagText(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("flagtext", flag.ContinueOnError)
	cmdDir := fs.String("flags", "", "the command whose registered flags count (default: cmd/offsetagent of the packages' module)")
	verbose := fs.Bool("v", true, "list each literal")
	fs.SetOutput(out)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		return errors.New("usage: flagtext [-flags CMDDIR] DIR...")
	}
	if *cmdDir == "" {
		root, _, err := moduleOf(fs.Arg(0))
		if err != nil {
			return err
		}
		*cmdDir = filepath.Join(root, "cmd", "offsetagent")
	}
	ft, err := FlagTexts(*cmdDir, fs.Args()...)
	if err != nil {
		return err
	}
	ft.write(out, *verbose)
	return nil
}

// FlagTexts lists the string literals of the non-test files of dirs that hold a "--word", and
// which of those words are flags registered by the command in cmdDir.
func FlagTexts(cmdDir string, dirs ...string) (*FlagText, error) {
	registered, err := registeredFlags(cmdDir)
	if err != nil {
		return nil, err
	}
	pkgs, _, err := load(packages.NeedName|packages.NeedFiles|packages.NeedSyntax, dirs...)
	if err != nil {
		return nil, err
	}
	ft := &FlagText{Registered: registered}
	for _, p := range pkgs {
		for _, f := range p.Syntax {
			ast.Inspect(f, func(n ast.Node) bool {
				lit, ok := n.(*ast.BasicLit)
				if !ok || lit.Kind != token.STRING {
					return true
				}
				s, err := strconv.Unquote(lit.Value)
				if err != nil {
					return true
				}
				var l Literal
				for _, m := range dashWord.FindAllStringSubmatch(s, -1) {
					if registered[m[1]] {
						l.Flags = append(l.Flags, m[1])
					} else {
						l.Other = append(l.Other, m[1])
					}
				}
				if len(l.Flags)+len(l.Other) > 0 {
					l.Pos = p.Fset.Position(lit.Pos())
					ft.Literals = append(ft.Literals, l)
				}
				return true
			})
		}
	}
	slices.SortFunc(ft.Literals, func(a, b Literal) int {
		return cmp.Or(cmp.Compare(a.Pos.Filename, b.Pos.Filename), cmp.Compare(a.Pos.Offset, b.Pos.Offset))
	})
	return ft, nil
}

// registeredFlags are the names the package in dir registers with package flag (a FlagSet's
// methods or flag's functions), where the name is a constant.
func registeredFlags(dir string) (map[string]bool, error) {
	pkgs, _, err := load(packages.NeedName|packages.NeedFiles|packages.NeedSyntax|packages.NeedTypes|packages.NeedTypesInfo, dir)
	if err != nil {
		return nil, err
	}
	names := map[string]bool{}
	for _, p := range pkgs {
		for _, f := range p.Syntax {
			ast.Inspect(f, func(n ast.Node) bool {
				call, ok := n.(*ast.CallExpr)
				if !ok {
					return true
				}
				sel, ok := call.Fun.(*ast.SelectorExpr)
				if !ok {
					return true
				}
				fn, ok := p.TypesInfo.Uses[sel.Sel].(*types.Func)
				if !ok || fn.Pkg() == nil || fn.Pkg().Path() != "flag" {
					return true
				}
				i, ok := flagSetNameArg[fn.Name()]
				if !ok || i >= len(call.Args) {
					return true
				}
				if tv, ok := p.TypesInfo.Types[call.Args[i]]; ok && tv.Value != nil && tv.Value.Kind() == constant.String {
					names[constant.StringVal(tv.Value)] = true
				}
				return true
			})
		}
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("%s registers no flag", dir)
	}
	return names, nil
}

func (ft *FlagText) write(out io.Writer, verbose bool) {
	perFlag := map[string]int{}
	named, other := 0, 0
	for _, l := range ft.Literals {
		if len(l.Flags) > 0 {
			named++
		} else {
			other++
		}
		for _, f := range l.Flags {
			perFlag[f]++
		}
		if verbose {
			var words []string
			for _, f := range l.Flags {
				words = append(words, "--"+f)
			}
			for _, o := range l.Other {
				words = append(words, "--"+o+" (not a flag)")
			}
			fmt.Fprintf(out, "%s:%d: %s\n", l.Pos.Filename, l.Pos.Line, strings.Join(words, ", "))
		}
	}
	flags := make([]string, 0, len(perFlag))
	for f := range perFlag {
		flags = append(flags, f)
	}
	slices.SortFunc(flags, func(a, b string) int { return cmp.Or(cmp.Compare(perFlag[b], perFlag[a]), cmp.Compare(a, b)) })
	var counts []string
	for _, f := range flags {
		counts = append(counts, fmt.Sprintf("--%s %d", f, perFlag[f]))
	}
	fmt.Fprintf(out, "%d literals name a flag (%d distinct flags: %s); %d name only other --words\n",
		named, len(flags), strings.Join(counts, ", "), other)
}
