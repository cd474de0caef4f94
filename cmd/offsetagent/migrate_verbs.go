package main

import (
	"flag"
	"fmt"
	"io"
	"slices"
)

// migrateVerbs are migrate's verbs, by their first argument; `migrate` with any other first
// argument is the shortcut (plan and apply in one run). A verb of its own file registers here.
var migrateVerbs = map[string]func(args []string, stdout, stderr io.Writer) int{
	"plan":     cmdMigratePlan,
	"apply":    cmdMigrateApply,
	"verify":   cmdMigrateVerify,
	"rollback": cmdMigrateRollback, // its own flag set and help (migrate_rollback.go)
}

// verbFlagSet is the flag set of migrate's verb: the flags of its help groups, taken from
// c's (sharing their values), and those extra registers first.
func verbFlagSet(verb string, c *migrateCmd, extra func(fs *flag.FlagSet)) *flag.FlagSet {
	all := flag.NewFlagSet("migrate", flag.ContinueOnError)
	c.register(all)
	fs := flag.NewFlagSet("migrate "+verb, flag.ContinueOnError)
	if extra != nil {
		extra(fs)
	}
	for _, g := range helpOf(fs.Name()).groups {
		for _, name := range g.flags {
			if fs.Lookup(name) != nil {
				continue
			}
			f := all.Lookup(name)
			if f == nil {
				panic(fmt.Sprintf("migrate %s: help group %q names --%s, which migrate does not register", verb, g.title, name))
			}
			fs.Var(f.Value, name, f.Usage)
		}
	}
	return fs
}

// parseVerb parses a verb's args: its flags, before or after its one positional argument
// (what names it; "" for a verb that takes none). flags are args without it. done says the
// command must return code now.
func parseVerb(fs *flag.FlagSet, args []string, what string, stdout, stderr io.Writer) (arg string, flags []string, code int, done bool) {
	if code, done := parseArgs(fs, args, stdout, stderr); done {
		return "", nil, code, true
	}
	flags = args
	if fs.NArg() > 0 && what != "" {
		at := len(args) - fs.NArg()
		arg = fs.Arg(0)
		flags = append(slices.Clone(args[:at]), args[at+1:]...)
		if code, done := parseArgs(fs, fs.Args()[1:], stdout, stderr); done {
			return "", nil, code, true
		}
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "offsetagent %s: unexpected argument %q\n", fs.Name(), fs.Arg(0))
		return "", nil, 2, true
	}
	return arg, flags, 0, false
}
