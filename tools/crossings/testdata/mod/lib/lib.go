// Package lib speaks in the tool's words.
package lib

var texts = []string{
	"use --name-one here",
	`--two and --three`,
	"a--name-one is no flag",
	"another tool: --reset-offsets --to-latest",
	"no dashes",
}

// --two in a comment is not a literal.
var _ = texts
