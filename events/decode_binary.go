package events

import (
	"strings"
	"time"

	"github.com/cloudevents/sdk-go/v2/binding/format"
	"github.com/cloudevents/sdk-go/v2/event"
	"github.com/segmentio/kafka-go"
)

// requestAttributes are what decodeRequest needs of a request record's CloudEvent: its
// attributes, the three extensions it reads, and its data.
type requestAttributes struct {
	id, source, typ, contentType string
	// invalid is the error of the event's Validate (nil when valid). It is reported after
	// the id and source are known, so that the failed result can name the request.
	invalid                  error
	dryRun, deadline, giveUp extension
	// data is the event data; binary says the data is the record value itself.
	data   []byte
	binary bool
}

// extension is the value of an extension attribute: v as sdk-go typed it, or, read from a
// binary-mode header by binaryAttributes, the text s (v nil). ok says it is present.
type extension struct {
	v  any
	s  string
	ok bool
}

// sdkAttributes reads the record's event with sdk-go's binding: every encoding, spec version
// and oddity, each refused with the error its reason names.
func sdkAttributes(msg *kafka.Message) (requestAttributes, *DecodeError) {
	ev, binary, derr := recordEvent(msg, false)
	if derr != nil {
		return requestAttributes{}, derr
	}
	a := requestAttributes{id: ev.ID(), source: ev.Source(), typ: ev.Type(), contentType: ev.DataContentType(),
		invalid: ev.Validate(), data: ev.Data(), binary: binary}
	if binary {
		// The data is the record value itself (already checked as UTF-8): no copy of what
		// may be megabytes of offsets.
		a.data = msg.Value
	}
	// The SDK copies the extensions on every read of them: one copy serves the three.
	ext := ev.Extensions()
	for _, x := range []struct {
		name string
		to   *extension
	}{{"dryrun", &a.dryRun}, {ExtensionDeadline, &a.deadline}, {ExtensionGiveUp, &a.giveUp}} {
		x.to.v, x.to.ok = ext[x.name]
	}
	return a, nil
}

// maxBinaryHeaders bounds the headers binaryAttributes compares with each other.
const maxBinaryHeaders = 32

// binaryAttributes reads the plain binary-mode request every client of the agent sends
// (RequestMessage) without sdk-go: a CloudEvents 1.0 record with one header for each of
// ce_specversion, ce_id, ce_source and ce_type, perhaps content-type, ce_subject, ce_time and
// extensions, all under distinct ASCII names. It gives what sdkAttributes gives for such a
// record in one allocation (one string holds every value; sdk-go takes 35). Whatever it is not
// sure to read as sdk-go does (a duplicate header, a source that url.Parse would rewrite, an
// attribute sdk-go would refuse, ce_dataschema, a content-type other than application/json),
// it leaves to sdkAttributes (ok false): it never refuses a record itself, so every error
// stays sdk-go's. TestBinaryAttributesMatchSDK and FuzzBinaryAttributes hold it to
// sdkAttributes.
func binaryAttributes(msg *kafka.Message) (a requestAttributes, ok bool) {
	hs := msg.Headers
	if len(hs) > maxBinaryHeaders {
		return a, false
	}
	// The values wanted, as offsets into one string of them all, by header index.
	const (
		hSpecVersion = iota
		hID
		hSource
		hType
		hContentType
		hTime
		hDryRun
		hDeadline
		hGiveUp
		nWanted
	)
	var at [nWanted]int
	for i := range at {
		at[i] = -1
	}
	size := 0
	for i := range hs {
		k := hs[i].Key
		if !isASCII(k) {
			// strings.ToLower, which NewMessage applies, maps some non-ASCII letters to
			// ASCII ones (the Kelvin sign to k).
			return a, false
		}
		for j := range i {
			if strings.EqualFold(hs[j].Key, k) {
				return a, false
			}
		}
		w := -1
		switch {
		case strings.EqualFold(k, HeaderContentType):
			w = hContentType
		case len(k) < len(HeaderPrefix) || !strings.EqualFold(k[:len(HeaderPrefix)], HeaderPrefix):
			continue // not read by the binding
		default:
			switch name := k[len(HeaderPrefix):]; {
			case strings.EqualFold(name, "specversion"):
				w = hSpecVersion
			case strings.EqualFold(name, "id"):
				w = hID
			case strings.EqualFold(name, "source"):
				w = hSource
			case strings.EqualFold(name, "type"):
				w = hType
			case strings.EqualFold(name, "time"):
				w = hTime
			case strings.EqualFold(name, "subject"):
				// sdk-go trims it and drops it when empty; Validate then has nothing to
				// refuse, and a request does not use it.
				continue
			case strings.EqualFold(name, "dataschema"), strings.EqualFold(name, "datacontenttype"):
				return a, false
			case !extensionName(name):
				return a, false // sdk-go refuses it
			case strings.EqualFold(name, "dryrun"):
				w = hDryRun
			case strings.EqualFold(name, ExtensionDeadline):
				w = hDeadline
			case strings.EqualFold(name, ExtensionGiveUp):
				w = hGiveUp
			default:
				continue // an extension the request does not read
			}
		}
		at[w] = i
		size += len(hs[i].Value)
	}
	if at[hSpecVersion] < 0 || at[hID] < 0 || at[hSource] < 0 || at[hType] < 0 {
		return a, false
	}
	var b strings.Builder
	b.Grow(size)
	for _, i := range at {
		if i >= 0 {
			b.Write(hs[i].Value)
		}
	}
	all := b.String()
	var vals [nWanted]string
	var has [nWanted]bool
	off := 0
	for w, i := range at {
		if i >= 0 {
			vals[w], has[w] = all[off:off+len(hs[i].Value)], true
			off += len(hs[i].Value)
		}
	}
	// A content-type naming an event format would make the record structured.
	if vals[hSpecVersion] != event.CloudEventsVersionV1 || format.Lookup(vals[hContentType]) != nil {
		return a, false
	}
	// sdk-go trims the id, type and content type (SetID, SetType, SetDataContentType), not
	// the source, which url.Parse reads and URL.String writes back.
	a.id = strings.TrimSpace(vals[hID])
	a.typ = strings.TrimSpace(vals[hType])
	a.contentType = strings.TrimSpace(vals[hContentType])
	a.source = vals[hSource]
	if a.id == "" || a.typ == "" || !plainPath(a.source) {
		return requestAttributes{}, false
	}
	if a.contentType != "" && a.contentType != event.ApplicationJSON {
		// Validate parses any other media type (mime.ParseMediaType).
		return requestAttributes{}, false
	}
	if has[hTime] {
		// ce_time is read with types.ToTime, which parses a string so.
		if _, err := time.Parse(time.RFC3339Nano, vals[hTime]); err != nil {
			return requestAttributes{}, false
		}
	}
	a.dryRun = extension{s: vals[hDryRun], ok: has[hDryRun]}
	a.deadline = extension{s: vals[hDeadline], ok: has[hDeadline]}
	a.giveUp = extension{s: vals[hGiveUp], ok: has[hGiveUp]}
	a.data, a.binary = msg.Value, true
	return a, true
}

// extensionName reports whether sdk-go takes name (a header name without its prefix) as an
// extension name: ASCII letters and digits (validateExtensionName, of the name NewMessage
// lower-cased), not longer than event.MaxExtensionNameLength when that is set.
func extensionName(name string) bool {
	if name == "" || event.MaxExtensionNameLength > 0 && len(name) > event.MaxExtensionNameLength {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if (c < 'a' || c > 'z') && (c < 'A' || c > 'Z') && (c < '0' || c > '9') {
			return false
		}
	}
	return true
}

// plainPath reports whether s is an absolute path of unreserved characters and slashes
// ("/offsetagent/cli"): url.Parse takes it as a path alone, and URL.String writes it back
// unchanged. Anything else (a scheme, which it lower-cases; an authority; a query; an escape
// it may rewrite) is left to sdk-go.
func plainPath(s string) bool {
	if s == "" || s[0] != '/' || strings.HasPrefix(s, "//") {
		return false
	}
	for i := 1; i < len(s); i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case c == '/' || c == '-' || c == '.' || c == '_' || c == '~':
		default:
			return false
		}
	}
	return true
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}
