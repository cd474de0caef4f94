package wording

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"reflect"
	"strings"
	"unicode"
)

// Words spells settings, fixes and next steps for a reader: the library names them by type,
// and only its caller knows how its reader gives them (cmd/offsetagent: as flags).
type Words interface {
	Setting(Setting) string
	Fix(Fix) string
	Next(Next) string
}

// Text is a message whose Setting, Fix, Next, Text and error arguments are spelled when it is
// read (Spell), with the words of its reader. The zero Text is empty.
type Text struct {
	format string
	args   []any
	// in are the words MarshalJSON spells with (nil: GoWords); see SpellIn.
	in Words
}

// Textf is the Text of format and args, as fmt.Sprintf's.
func Textf(format string, args ...any) Text { return Text{format: format, args: args} }

// Plain is a Text that names no setting: a message from elsewhere (B's agent, Connect, an
// error), kept as it is.
func Plain(s string) Text {
	if s == "" {
		return Text{}
	}
	return Text{format: "%s", args: []any{s}}
}

// IsZero reports whether t is empty.
func (t Text) IsZero() bool { return t.format == "" && len(t.args) == 0 }

// Spell is t in w's words.
func (t Text) Spell(w Words) string {
	if t.IsZero() {
		return ""
	}
	if len(t.args) == 0 {
		return t.format
	}
	args := make([]any, len(t.args))
	for i, a := range t.args {
		args[i] = spellArg(a, w)
	}
	return fmt.Sprintf(t.format, args...)
}

// spellArg is a in w's words when it is one of Text's typed arguments, else a.
func spellArg(a any, w Words) any {
	switch v := a.(type) {
	case Setting:
		return w.Setting(v)
	case []Setting:
		out := make([]string, len(v))
		for i, s := range v {
			out[i] = w.Setting(s)
		}
		return strings.Join(out, ", ")
	case Fix:
		return w.Fix(v)
	case []Fix:
		return spellFixes(v, w)
	case Next:
		return w.Next(v)
	case Text:
		return v.Spell(w)
	case error:
		return SpellError(v, w)
	case interface{ Spell(Words) string }:
		return v.Spell(w)
	}
	return a
}

// Join is ts one after the other, sep between them.
func Join(ts []Text, sep string) Text {
	if len(ts) == 0 {
		return Text{}
	}
	args := make([]any, len(ts))
	for i, t := range ts {
		args[i] = t
	}
	return Textf(strings.Repeat("%v"+strings.ReplaceAll(sep, "%", "%%"), len(ts)-1)+"%v", args...)
}

// String is t spelled with GoWords: for logs and tests.
func (t Text) String() string { return t.Spell(GoWords) }

// Append is t followed by format and args.
func (t Text) Append(format string, args ...any) Text {
	if t.IsZero() {
		return Textf(format, args...)
	}
	return Textf("%v"+format, append([]any{t}, args...)...)
}

// MarshalJSON writes t as a JSON string, spelled with the words SpellIn gave it (GoWords
// without).
func (t Text) MarshalJSON() ([]byte, error) {
	w := t.in
	if w == nil {
		w = GoWords
	}
	return json.Marshal(t.Spell(w))
}

// SpellIn makes every Text reachable from v through exported fields, pointers, slices and
// maps' values (v is a pointer) marshal as JSON in w's words: a report is spelled for its
// reader when it is written.
func SpellIn(v any, w Words) {
	seen := map[uintptr]bool{}
	var walk func(rv reflect.Value)
	textType := reflect.TypeFor[Text]()
	walk = func(rv reflect.Value) {
		switch rv.Kind() {
		case reflect.Pointer:
			if rv.IsNil() || seen[rv.Pointer()] {
				return
			}
			seen[rv.Pointer()] = true
			walk(rv.Elem())
		case reflect.Interface:
			if !rv.IsNil() && rv.Elem().Kind() == reflect.Pointer {
				walk(rv.Elem())
			}
		case reflect.Struct:
			if rv.Type() == textType {
				if rv.CanSet() {
					t := rv.Interface().(Text)
					t.in = w
					rv.Set(reflect.ValueOf(t))
				}
				return
			}
			for i := 0; i < rv.NumField(); i++ {
				if rv.Type().Field(i).IsExported() {
					walk(rv.Field(i))
				}
			}
		case reflect.Slice, reflect.Array:
			for i := 0; i < rv.Len(); i++ {
				walk(rv.Index(i))
			}
		case reflect.Map:
			if rv.Type().Elem().Kind() == reflect.Pointer {
				for _, k := range rv.MapKeys() {
					walk(rv.MapIndex(k))
				}
			}
		}
	}
	walk(reflect.ValueOf(v))
}

// Error is an error whose message is a Text, with the Fixes that would do something about it
// (alternatives). Errorf's %w wraps Err as fmt.Errorf does.
type Error struct {
	Text  Text
	Fixes []Fix
	Err   error
}

// Errorf is the Error of format and args, as fmt.Errorf's: the argument of its %w is Err.
func Errorf(format string, args ...any) *Error {
	e := &Error{Text: Textf(strings.ReplaceAll(format, "%w", "%v"), args...)}
	if i := wrapArg(format); i >= 0 && i < len(args) {
		e.Err, _ = args[i].(error)
	}
	return e
}

// wrapArg is the index of the argument of format's first %w (-1 for none).
func wrapArg(format string) int {
	n := 0
	for i := 0; i < len(format); i++ {
		if format[i] != '%' {
			continue
		}
		i++
		for i < len(format) && strings.IndexByte("+-# 0123456789.", format[i]) >= 0 {
			i++
		}
		if i >= len(format) || format[i] == '%' {
			continue
		}
		if format[i] == 'w' {
			return n
		}
		n++
	}
	return -1
}

// Spell is e in w's words: its text, then its fixes.
func (e *Error) Spell(w Words) string {
	s := e.Text.Spell(w)
	if len(e.Fixes) > 0 {
		s += ": " + spellFixes(e.Fixes, w)
	}
	return s
}

func (e *Error) Error() string { return e.Spell(GoWords) }
func (e *Error) Unwrap() error { return e.Err }

// spellFixes are fixes as alternatives.
func spellFixes(fixes []Fix, w Words) string {
	out := make([]string, len(fixes))
	for i, f := range fixes {
		out[i] = w.Fix(f)
	}
	return strings.Join(out, "; or ")
}

// SpellError is err's message in w's words: every *Error in err's tree (wrapped by %w or
// joined), and every other error with a Spell method, is spelled with w where err's message
// holds it.
func SpellError(err error, w Words) string {
	msg := err.Error()
	var walk func(error)
	walk = func(err error) {
		if err == nil {
			return
		}
		if e, ok := err.(speller); ok {
			if g := e.Error(); strings.Contains(msg, g) {
				msg = strings.ReplaceAll(msg, g, e.Spell(w))
				return // Spell spelled what it wraps
			}
		}
		switch u := err.(type) {
		case interface{ Unwrap() []error }:
			for _, x := range u.Unwrap() {
				walk(x)
			}
		case interface{ Unwrap() error }:
			walk(u.Unwrap())
		}
	}
	if w != GoWords {
		walk(err)
	}
	return msg
}

// GoWords spells settings as Go names (StopSource), fixes and next steps in short words
// ("set KEY=VALUE"): for logs and tests, which read the library's own words.
var GoWords Words = goWords{}

type goWords struct{}

func (goWords) Setting(s Setting) string {
	var b strings.Builder
	for part := range strings.SplitSeq(string(s), "_") {
		switch up := strings.ToUpper(part); up {
		case "URL", "ID", "API", "MM2":
			b.WriteString(up)
		default:
			r := []rune(part)
			if len(r) > 0 {
				r[0] = unicode.ToUpper(r[0])
			}
			b.WriteString(string(r))
		}
	}
	return b.String()
}

func (w goWords) Fix(f Fix) string {
	switch f := f.(type) {
	case SetValue:
		return fmt.Sprintf("set %s=%s", f.Key, f.Value)
	case UnsetKey:
		return "unset " + f.Key
	case MapValueTo:
		return fmt.Sprintf("map %s=%s", f.From, f.To)
	case KeepAKey:
		return "keep " + f.Key + " on A"
	case Drop:
		return "drop the edit of " + f.Key
	case RenameOne:
		return strings.TrimSpace("rename " + f.Name)
	case ExcludeOne:
		return strings.TrimSpace("exclude " + f.Name)
	case Give:
		return strings.TrimSpace(w.Setting(f.Setting) + " " + f.Value)
	case Outside:
		return f.Text.Spell(w)
	}
	return fmt.Sprintf("%#v", f)
}

func (goWords) Next(n Next) string {
	return strings.TrimSpace(string(n.Verb) + " " + strings.Join(n.Args, " "))
}

// TextKey is the log attribute that carries a log message as a Text (Warn): a caller's
// handler spells the message from it in its reader's words and drops it.
const TextKey = "fleet_text"

// Warn logs t at level Warn, its message spelled with GoWords and t itself under TextKey.
func Warn(l *slog.Logger, t Text, args ...any) {
	l.Warn(t.String(), append(args, TextKey, t)...)
}

// speller is an error that spells itself in a reader's words (Error, and the stages' own
// error types).
type speller interface {
	error
	Spell(Words) string
}

// UnmarshalJSON reads a JSON string as a Plain Text: a report read back holds its messages
// as they were spelled for their reader.
func (t *Text) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	*t = Plain(s)
	return nil
}
