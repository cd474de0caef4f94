// Package wording holds the words a library and its caller share about a migration's run,
// and the messages that carry them until someone reads them: a library names a setting of the
// run, a fix or a next step by type, and only its caller knows how its reader gives them.
//
// A message a person reads (a refusal, a hazard's fix, a report's note, a log record, a
// MirrorMaker 2 health finding) is a Text: a format and its arguments, kept as they are until
// the message is read. Its Setting, Fix and Next arguments, and Texts and errors it quotes,
// stay typed; Spell writes it in the words of its reader (Words). cmd/offsetagent spells a
// Setting as its flag (StopSource is --stop-source) and a Next as a command line; GoWords,
// the libraries' own words, spell a Setting as its Go name, for logs and tests. An Error is an
// error whose message is a Text, with the Fixes that answer it; SpellError spells every such
// error in an error's tree. A report is spelled when it is written: SpellIn gives every Text
// reachable from it the words MarshalJSON spells with. A Text read back from JSON is Plain,
// as its reader read it. Warn logs a Text under TextKey, so that a caller's log handler spells
// the message for its reader.
//
// The settings of a run (Setting: FromBrokers, StopSource, MM2ConfigTopic, ...; all of them
// in Settings), the kinds of Fix (SetValue, Give, Outside, ...; one of each in FixKinds) and
// the verbs a Next names (Verbs) are listed here, so that a caller that spells them checks
// that it spells each, and no library needs to know how.
//
// The package sits below every package that words a message for a migration's user: mm2,
// whose health findings name the settings its caller gave (the config topic of MirrorMaker
// 2's connectors, the source alias and separator, the maximum age of a checkpoint, the replay
// the caller allows), and migrate/fleet, which keeps these names for the migration's stages
// (fleet.Text is a Text). It imports nothing of the module and does no I/O.
package wording
