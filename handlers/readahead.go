package handlers

import (
	"context"
	"maps"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/offsetagent/offsetagent/events"
	"github.com/offsetagent/offsetagent/handlers/connectors"
	"github.com/offsetagent/offsetagent/offsetstore"
)

// A large request's initial_offsets may come from the decoder unchecked
// (events.DecodeRequestDeferred): only the single pass reads their text then, so that the
// request's bytes are read once. The pass must run before any stage, since a request whose
// text does not decode is a record that fails at decode_request, with the decoder's error, and
// validate_config already acts on a request (it takes the connector's claim, rolls back an
// interrupted earlier request, writes an intent, asks Connect). So ReadAhead reads the text
// with what validate_config will settle (the name, the config's properties, the class, the
// topics and so the record batches' partition count), and validate_offsets takes the records
// when validate_config settled the same. When the pass gives
// up, the request is decoded as DecodeRequest decodes it (events.Request.Check), errors
// included, and takes the path it takes today.

// ReadAhead reads the initial_offsets text that events.DecodeRequestDeferred left unchecked
// (events.Request.Deferred) into the records or record batches validate_offsets will use, or,
// when the single pass does not take it, finishes the decoding (events.Request.Check), whose
// error it returns: the record is then not a decodable request. It does nothing for a request
// that is not deferred. read is the time the single pass took when its records are kept
// (validate_offsets reports it as its own). The caller runs Create on the request next.
func (c *Creator) ReadAhead(ctx context.Context, req *events.Request) (read time.Duration, err error) {
	if !req.Deferred() {
		return 0, nil
	}
	if a := c.readAhead(ctx, req); a != nil {
		req.Settle() // the single pass reads strict JSON: the text is an array of entries
		c.ahead.Store(req, a)
		return a.took, nil
	}
	return 0, req.Check()
}

// readAhead is what ReadAhead read: the records of the offsets (or their record batches) and
// what they were read with.
type readAhead struct {
	name    string
	class   *connectors.Class
	props   map[string]string
	topics  []string // the topics the records are written to, as validate_config settles them
	records []offsetstore.Record
	encoded *offsetstore.Encoded
	took    time.Duration
}

// readAhead runs the single pass on req's offsets text with the name, properties, class and
// topics validate_config will settle for it; nil when it does not apply or gives up.
func (c *Creator) readAhead(ctx context.Context, req *events.Request) *readAhead {
	d := &req.Data
	if d.Config == nil || len(d.LoneSurrogates) > 0 || len(d.RawOffsets) == 0 {
		return nil
	}
	start := time.Now()
	// As validate_config makes them (validateConfig, checkConfig, settleTopics).
	name := strings.TrimSpace(d.Name)
	props := d.Config.Map()
	if _, ok := d.Config.Get("name"); !ok {
		props["name"] = name
	}
	class, _ := c.opts.Registry.Lookup(props["connector.class"])
	if class == nil || class.Type != connectors.Source {
		return nil
	}
	j := &job{req: req, name: name, props: props, class: class, typ: connectors.Source}
	if c.settleTopics(j) != nil {
		return nil // validate_config refuses the request
	}
	a := &readAhead{name: name, class: class, props: props, topics: j.writeTopics(c.opts.OffsetsTopic)}
	ranges := rawRanges(rawParallelBytes, runtime.GOMAXPROCS(0))
	ok := false
	if partitions := c.batchPartitions(ctx, j); partitions > 0 {
		a.encoded, ok = rawSourceBatches(name, class, props, d.RawOffsets, ranges, partitions)
	} else {
		a.records, ok = rawSourceRecords(name, class, props, d.RawOffsets, ranges)
	}
	if !ok {
		return nil
	}
	a.took = time.Since(start)
	return a
}

// takeReadAhead returns (and forgets) what ReadAhead read for req, if anything.
func (c *Creator) takeReadAhead(req *events.Request) *readAhead {
	a, ok := c.ahead.LoadAndDelete(req)
	if !ok {
		return nil
	}
	return a.(*readAhead)
}

// fits reports whether the records were read with what validate_config settled for j. The
// record batches' partition count is the one of the same topics, read moments before.
func (a *readAhead) fits(c *Creator, j *job) bool {
	return j.typ == connectors.Source && a.name == j.name && a.class == j.class && maps.Equal(a.props, j.props) &&
		slices.Equal(a.topics, j.writeTopics(c.opts.OffsetsTopic))
}
