//go:build !faultinject

package main

// faultFromEnv is the production build's: no fault hook, whatever the environment says (the
// crash tests' hook is built only with -tags faultinject).
func faultFromEnv() func(string, string) { return nil }
