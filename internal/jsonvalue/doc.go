// Package jsonvalue owns the ordered JSON value model the service works with: Map (an object
// with its members in order), Field, Number (a number kept as its literal text), DecodeValue and
// ScanValue (a fast scanner, also usable value by value through Scanner), KindOf for messages,
// Append, the one compact writer of such values for our own documents, and a lexical scanner
// (ScanMembers, SkipValue, SkipString, SkipSpace) that finds the structure of text that may be
// malformed without decoding it.
//
// It knows nothing of Kafka Connect: writing values exactly as Connect's Jackson does (number
// normalisation, Java HashMap key order, Jackson's string escapes) is package offsetstore's.
package jsonvalue
