// Package other calls a low.Scanner of a package it does not know.
package other

import "example.com/mod/low"

func Call(s low.Scanner) { s.Next() }
