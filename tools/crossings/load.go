package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/tools/go/packages"
)

// moduleOf finds the module that holds dir (the nearest go.mod above it) and returns its root
// with the go list pattern of dir inside it ("./cmd/offsetagent", "./migrate/..."). The
// reports read another module than their own: go list runs in that module's root.
func moduleOf(arg string) (root, pattern string, err error) {
	dir, rest := arg, ""
	if d, ok := strings.CutSuffix(arg, "/..."); ok {
		dir, rest = d, "/..."
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", "", err
	}
	if fi, err := os.Stat(abs); err != nil || !fi.IsDir() {
		return "", "", fmt.Errorf("%s: not a directory", arg)
	}
	for root = abs; ; {
		if _, err := os.Stat(filepath.Join(root, "go.mod")); err == nil {
			break
		}
		up := filepath.Dir(root)
		if up == root {
			return "", "", fmt.Errorf("%s: no go.mod above it", arg)
		}
		root = up
	}
	rel, err := filepath.Rel(root, abs)
	if err != nil {
		return "", "", err
	}
	return root, "./" + filepath.ToSlash(rel) + rest, nil
}

// load loads the packages of args (directories, "/..." allowed), which must lie in one module,
// without their tests.
func load(mode packages.LoadMode, args ...string) ([]*packages.Package, string, error) {
	if len(args) == 0 {
		return nil, "", errors.New("no directory given")
	}
	var root string
	patterns := make([]string, len(args))
	for i, a := range args {
		r, p, err := moduleOf(a)
		if err != nil {
			return nil, "", err
		}
		if root != "" && r != root {
			return nil, "", fmt.Errorf("%s is in module %s, %s in %s: one module at a time", args[0], root, a, r)
		}
		root, patterns[i] = r, p
	}
	cfg := &packages.Config{Mode: mode, Dir: root, Env: append(os.Environ(), "GOWORK=off")}
	pkgs, err := packages.Load(cfg, patterns...)
	if err != nil {
		return nil, "", err
	}
	var errs []error
	packages.Visit(pkgs, nil, func(p *packages.Package) {
		for _, e := range p.Errors {
			errs = append(errs, fmt.Errorf("%s: %v", p.PkgPath, e))
		}
	})
	if len(pkgs) == 0 {
		errs = append(errs, fmt.Errorf("no package in %s", strings.Join(args, " ")))
	}
	return pkgs, root, errors.Join(errs...)
}
