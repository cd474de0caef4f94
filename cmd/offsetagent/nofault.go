//go:build !faultinject

package main

// faultFromEnv is the production build's: no fault hook, whatever the environment says (the
// crash tests' hook is built only with -tags faultinject).
func faultFromEnv() func(string, string) { return nil }

// faultVariables is empty: the production build reads none of the crash tests' variables
// (their names are not even in the binary), so they are unknown to it.
func faultVariables() []string { return nil }
