// Package javaregex evaluates Java regular expressions (java.util.regex.Pattern) in Go, with
// Java's meaning, for the patterns that Kafka's Java programs read from their configs:
// MirrorMaker 2's groups, groups.exclude, topics and topics.exclude, Connect's topics.regex,
// RegexRouter's regex. A pattern written for Java and read by Go's regexp is judged by the
// wrong dialect: Go refuses lookahead, lookbehind, possessive quantifiers and back references,
// and reads others differently (Go's `.` stops at \n only, Java's at every line terminator;
// Go's (?i) folds Unicode, Java's US-ASCII; Go's $ is not Java's). A check that compiles such
// a pattern with Go's regexp and shrugs at the error says nothing where it should refuse.
//
// Use:
//
//	re, err := javaregex.Compile(expr) // an *Error: Unsupported, or Java refuses it too
//	ok, err := re.Matches(name)        // Pattern.matcher(name).matches(); ErrUndecidable: no answer
//	lit := re.LiteralPrefix()          // what every name it matches begins with
//	b, err := javaregex.AfterPrefix("A.", expr) // "A\.(?:expr)": matches "A."+name where expr matches name
//	q := javaregex.Quote("A.")                  // "A\.": matches exactly "A."
//
// How: the parser (parse.go) reads Java's syntax, JDK 11 to 21, into a tree where each node
// has Java's meaning made explicit: every literal and class becomes a set of code points
// (set.go), computed with Java's rules (character-class union, && intersection with the lowest
// precedence, a leading ^ negating the whole class as Java 9+ does, CASE_INSENSITIVE folding
// US-ASCII letters only and applied to each character and range before the class is
// combined), the dot excludes Java's line terminators unless DOTALL or UNIX_LINES say
// otherwise, each anchor is the Java anchor node it is (Begin, Dollar with its "before a final
// line terminator" rule, Caret and Dollar under MULTILINE, their UNIX_LINES variants), inline
// flags last to the end of their group as Java's do (so "a|(?i)b|c" folds c too), and the
// whole pattern must match the whole name. The tree is then written out (emit.go) for Go's
// regexp when it is regular, which then decides in linear time, and otherwise for regexp2, a
// backtracking engine (.NET syntax) that runs lookaround, atomic groups (possessive
// quantifiers become atomic groups) and back references as Java does; only constructs whose
// meaning the two dialects share are written, and capturing groups keep Java's numbers.
//
// What it cannot give Java's meaning with certainty it refuses, as an *Error with
// Unsupported set and the construct named, never a guess: the COMMENTS, UNICODE_CASE (with
// CASE_INSENSITIVE), UNICODE_CHARACTER_CLASS and CANON_EQ flags; \b and \B (their meaning
// changed in JDK 19); \R, \X, \N{...}; Unicode properties other than the POSIX classes (the
// Unicode tables of Java and Go differ by version); lookbehind of unbounded length, or with
// groups, references or lookaround inside; back references under CASE_INSENSITIVE or to a
// group not closed before them; quantified assertions; counts above 1000; a few spellings
// inside classes whose reading differs between Java versions. A pattern Java refuses is an
// *Error without Unsupported, with Java's own description where known: the program reading it
// fails to start. A match that backtracks past MatchTimeout, or a name that is not UTF-8, is
// ErrUndecidable: no answer is given, and a caller must not read it as false.
//
// The same parser reads a pattern for its structure only, for AfterPrefix (prefix.go), which
// moves a pattern behind a prefix (Connect's topics.regex across MirrorMaker 2's default
// policy: "orders-.*" becomes "A\.(?:orders-.*)", which matches "A.orders-eu") only where the parser reads
// the wrapped pattern as the prefix then the very pattern, and nothing in it looks before the
// start of the name. Reading for structure, it reads what it does not evaluate (\b, Unicode
// properties, \R, \X, \N{...}, UNICODE_CASE, back references anywhere) rather than refusing
// it; what would change the reading itself (the COMMENTS flag, the class spellings Java
// versions read differently, an empty \Q\E) it refuses for both purposes. There is one reader
// of Java's syntax in the module: this one.
//
// The proof is two tables a real JVM wrote. testdata/java-oracle.json: java.util.regex
// compiled each pattern of testdata/java-oracle-cases.json and matched it against each name;
// TestJavaOracle requires the same answers, the same refusals, and refuses as unsupported only
// the patterns the table lists. testdata/prefix-oracle.json: for each pattern and prefix of
// testdata/prefix-oracle-cases.json, what AfterPrefix made of it and Java's answers for the
// pattern against each name and for that regex against prefix+name; TestAfterPrefixOracle
// requires the same regex and the same answers on both sides, and that every refusal be one
// Java shows is needed or one the table lists. `make goldens` (tools/oracle, its regex set)
// regenerates both; the real tier's TestGoldens asks the JVM again.
package javaregex
