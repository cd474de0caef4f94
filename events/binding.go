package events

import (
	"bytes"
	"context"
	"io"
	"sort"
	"strings"

	"github.com/cloudevents/sdk-go/v2/binding"
	"github.com/cloudevents/sdk-go/v2/binding/format"
	"github.com/cloudevents/sdk-go/v2/binding/spec"
	"github.com/cloudevents/sdk-go/v2/types"
	"github.com/segmentio/kafka-go"
)

// Header names of the CloudEvents Kafka protocol binding.
const (
	// HeaderPrefix prefixes every CloudEvent attribute and extension header in binary mode.
	HeaderPrefix = "ce_"
	// HeaderContentType carries datacontenttype in binary mode and the event format in
	// structured mode.
	HeaderContentType = "content-type"
	// ExtensionPartitionKey is the extension the binding maps to the record key.
	ExtensionPartitionKey = "partitionkey"
)

// kafkaSpecs resolves ce_ header names to CloudEvent attributes. It is a read-only lookup
// table built once; nothing mutates it after package initialisation.
var kafkaSpecs = spec.WithPrefix(HeaderPrefix)

// Message is a kafka-go record seen as a CloudEvents binding.Message. It can be read several
// times. Header names are compared in lower case, as the binding spec defines them lower case
// and sdk-go's Sarama binding does the same.
type Message struct {
	// Value is the record value: the data in binary mode, the whole event in structured mode.
	Value []byte
	// Headers are the record headers in record order, with lower-cased names.
	Headers []kafka.Header
	// ContentType is the content-type header ("" when absent).
	ContentType string

	format  format.Format
	version spec.Version
	// skipData leaves the binary-mode data out of ReadBinary: DecodeRequest reads it straight
	// from the record value instead of a copy sdk-go would make.
	skipData bool
}

var (
	_ binding.Message               = (*Message)(nil)
	_ binding.MessageMetadataReader = (*Message)(nil)
)

// NewMessage wraps msg. A content-type that names an event format makes it structured; else a
// ce_specversion header naming a known version makes it binary; else its encoding is unknown.
func NewMessage(msg *kafka.Message) *Message {
	m := &Message{Value: msg.Value, Headers: make([]kafka.Header, 0, len(msg.Headers))}
	for _, h := range msg.Headers {
		k := strings.ToLower(h.Key)
		if k == HeaderContentType {
			m.ContentType = string(h.Value)
		}
		m.Headers = append(m.Headers, kafka.Header{Key: k, Value: h.Value})
	}
	if ft := format.Lookup(m.ContentType); ft != nil {
		m.format = ft
	} else if sv, ok := m.header(kafkaSpecs.PrefixedSpecVersionName()); ok {
		m.version = kafkaSpecs.Version(sv)
	}
	return m
}

// header returns the value of the last header named name (already lower case). The last one
// wins so that reading headers in order and looking one up agree on duplicates.
func (m *Message) header(name string) (string, bool) {
	for i := len(m.Headers) - 1; i >= 0; i-- {
		if m.Headers[i].Key == name {
			return string(m.Headers[i].Value), true
		}
	}
	return "", false
}

// ReadEncoding reports binary, structured or unknown.
func (m *Message) ReadEncoding() binding.Encoding {
	switch {
	case m.version != nil:
		return binding.EncodingBinary
	case m.format != nil:
		return binding.EncodingStructured
	default:
		return binding.EncodingUnknown
	}
}

// ReadStructured hands the record value to encoder when the record is in structured mode.
func (m *Message) ReadStructured(ctx context.Context, encoder binding.StructuredWriter) error {
	if m.format == nil {
		return binding.ErrNotStructured
	}
	return encoder.SetStructuredEvent(ctx, m.format, bytes.NewReader(m.Value))
}

// ReadBinary hands the ce_ headers, the content-type and the value to encoder, in record order.
func (m *Message) ReadBinary(_ context.Context, encoder binding.BinaryWriter) error {
	if m.version == nil {
		return binding.ErrNotBinary
	}
	for _, h := range m.Headers {
		var err error
		switch {
		case strings.HasPrefix(h.Key, HeaderPrefix):
			if attr := m.version.Attribute(h.Key); attr != nil {
				err = encoder.SetAttribute(attr, string(h.Value))
			} else {
				err = encoder.SetExtension(strings.TrimPrefix(h.Key, HeaderPrefix), string(h.Value))
			}
		case h.Key == HeaderContentType:
			err = encoder.SetAttribute(m.version.AttributeFromKind(spec.DataContentType), string(h.Value))
		}
		if err != nil {
			return err
		}
	}
	if m.Value != nil && !m.skipData {
		return encoder.SetData(bytes.NewBuffer(m.Value))
	}
	return nil
}

// GetAttribute returns a binary-mode attribute; structured records have none to offer here.
func (m *Message) GetAttribute(k spec.Kind) (spec.Attribute, interface{}) {
	if m.version == nil {
		return nil, nil
	}
	attr := m.version.AttributeFromKind(k)
	if attr == nil {
		return nil, nil
	}
	if k == spec.DataContentType {
		return attr, m.ContentType
	}
	v, _ := m.header(attr.PrefixedName())
	return attr, v
}

// GetExtension returns a binary-mode extension header value ("" when absent).
func (m *Message) GetExtension(name string) interface{} {
	v, _ := m.header(HeaderPrefix + strings.ToLower(name))
	return v
}

// Finish does nothing: a Kafka record needs no acknowledgement here; the caller commits.
func (m *Message) Finish(error) error { return nil }

// WriteMessage fills out with m: binary mode by default, structured mode when ctx says so
// (binding.WithForceStructured). It replaces out's value and headers and keeps its topic.
// A non-empty partitionkey extension becomes the record key,
// as the CloudEvents Kafka binding specifies; without one out.Key is left as it was.
func WriteMessage(ctx context.Context, m binding.Message, out *kafka.Message, transformers ...binding.Transformer) error {
	var key string
	transformers = append(transformers, binding.TransformerFunc(
		func(r binding.MessageMetadataReader, _ binding.MessageMetadataWriter) error {
			ext := r.GetExtension(ExtensionPartitionKey)
			if types.IsZero(ext) {
				return nil
			}
			s, err := types.Format(ext)
			if err != nil {
				return err
			}
			key = s
			return nil
		}))
	w := (*messageWriter)(out)
	if _, err := binding.Write(ctx, m, w, w, transformers...); err != nil {
		return err
	}
	if key != "" {
		out.Key = []byte(key)
	}
	return nil
}

// messageWriter writes a CloudEvent into a kafka-go record.
type messageWriter kafka.Message

var (
	_ binding.StructuredWriter = (*messageWriter)(nil)
	_ binding.BinaryWriter     = (*messageWriter)(nil)
)

// SetStructuredEvent writes the whole event as the value, with the format as content-type.
func (w *messageWriter) SetStructuredEvent(_ context.Context, f format.Format, ev io.Reader) error {
	b, err := io.ReadAll(ev)
	if err != nil {
		return err
	}
	w.Headers = []kafka.Header{{Key: HeaderContentType, Value: []byte(f.MediaType())}}
	w.Value = b
	return nil
}

// Start clears what a previous write left behind.
func (w *messageWriter) Start(context.Context) error {
	w.Headers = nil
	w.Value = nil
	return nil
}

// End puts the headers in a fixed order. sdk-go passes extensions in map order, and a record's
// header order would otherwise change between two writes of the same event.
func (w *messageWriter) End(context.Context) error {
	sort.SliceStable(w.Headers, func(i, j int) bool {
		ri, rj := headerRank(w.Headers[i].Key), headerRank(w.Headers[j].Key)
		if ri != rj {
			return ri < rj
		}
		return ri == extensionRank && w.Headers[i].Key < w.Headers[j].Key
	})
	return nil
}

// headerRank orders the required attributes first, then the optional ones; extensions
// (rank extensionRank) follow sorted by name.
func headerRank(k string) int {
	switch k {
	case HeaderPrefix + "specversion":
		return 0
	case HeaderPrefix + "id":
		return 1
	case HeaderPrefix + "source":
		return 2
	case HeaderPrefix + "type":
		return 3
	case HeaderContentType:
		return 4
	case HeaderPrefix + "subject":
		return 5
	case HeaderPrefix + "time":
		return 6
	case HeaderPrefix + "dataschema":
		return 7
	default:
		return extensionRank
	}
}

const extensionRank = 8

// SetData puts the data into the value. An event's encoded data comes as a *bytes.Buffer over
// it: the value takes those bytes as they are rather than copying them, since the event is
// the caller's own, built to be written (a large result's data is megabytes).
func (w *messageWriter) SetData(r io.Reader) error {
	if buf, ok := r.(*bytes.Buffer); ok {
		w.Value = buf.Bytes()
		return nil
	}
	b, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	w.Value = b
	return nil
}

// SetAttribute writes an attribute header; datacontenttype goes to content-type. A nil value
// removes the header.
func (w *messageWriter) SetAttribute(attr spec.Attribute, value interface{}) error {
	name := HeaderPrefix + attr.Name()
	if attr.Kind() == spec.DataContentType {
		name = HeaderContentType
	}
	return w.setHeader(name, value)
}

// SetExtension writes an extension header. A nil value removes the header.
func (w *messageWriter) SetExtension(name string, value interface{}) error {
	return w.setHeader(HeaderPrefix+name, value)
}

func (w *messageWriter) setHeader(name string, value interface{}) error {
	w.Headers = removeHeader(w.Headers, name)
	if value == nil {
		return nil
	}
	s, err := types.Format(value)
	if err != nil {
		return err
	}
	w.Headers = append(w.Headers, kafka.Header{Key: name, Value: []byte(s)})
	return nil
}

func removeHeader(hs []kafka.Header, name string) []kafka.Header {
	out := hs[:0]
	for _, h := range hs {
		if h.Key != name {
			out = append(out, h)
		}
	}
	return out
}
