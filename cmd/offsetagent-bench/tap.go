package main

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The tap sees every request the embedded broker answers, from the broker's side of each
// connection: when a request's last byte was read and when its response was written, its API,
// the client's id and the topics or group it names. The latency scenario runs the broker with
// it (-tap) and asks it, after each measurement, for the round trips the agent (or the echo)
// made, so that a request's publish-to-result time is split into the broker's share, each of
// the client's round trips and the client's own work between them, all on one clock and
// without a change to the agent.

// tapSpan is one request and its response, as the broker saw them.
type tapSpan struct {
	Conn   int    `json:"c"`
	Client string `json:"cl"`
	Key    int16  `json:"k"`
	// On names what the request is about: its topics, or its group (FindCoordinator,
	// OffsetCommit, ...), comma-separated.
	On string `json:"on,omitempty"`
	// Recv and Sent are the Unix times (ns) the request was read whole and its response
	// written; Sent is 0 for a request without a response yet.
	Recv int64 `json:"r"`
	Sent int64 `json:"s"`
	// Records is set for a Fetch response that carried record batches.
	Records bool `json:"x,omitempty"`
	// NoWait is set for a Fetch that asks the broker to answer at once (MaxWaitMillis 0): a
	// reader asking where a partition ends, not a long poll.
	NoWait bool `json:"nw,omitempty"`
	// corr is the request's correlation id on its connection.
	corr int32
}

// tap records the frames of every connection of a listener as they pass, a copy and a time
// each, and makes spans of them when asked (take): the parsing costs the broker nothing while
// it is measured.
type tap struct {
	mu     sync.Mutex
	conns  int
	frames []tapFrame
	// What take keeps between calls: the requests without a response yet, each connection's
	// requests by correlation id (their key and version, to read the response), and the topic
	// ids the brokers' Metadata answers gave names to (Fetch and Produce name topics by id
	// from v13 on).
	open    []tapSpan
	pending map[connCorr]int // index in open
	sent    map[connCorr]keyVersion
	topics  map[[16]byte]string
}

// tapFrame is one request or response frame (without its size) of connection conn.
type tapFrame struct {
	conn     int
	response bool
	at       int64
	b        []byte
}

// tapFrameMax bounds the bytes kept of a frame: enough for any request's header and topics
// and for the latency scenario's responses; a longer Fetch response is taken to carry
// records.
const tapFrameMax = 1 << 20

type connCorr struct {
	conn int
	corr int32
}

type keyVersion struct{ key, version int16 }

func newTap() *tap {
	return &tap{pending: map[connCorr]int{}, sent: map[connCorr]keyVersion{}, topics: map[[16]byte]string{}}
}

// listener wraps l so that its connections are tapped.
func (t *tap) listener(l net.Listener) net.Listener { return &tapListener{Listener: l, t: t} }

// frame records a frame seen at now.
func (t *tap) frame(conn int, response bool, b []byte, now int64) {
	full := len(b)
	b = slices.Clone(b[:min(len(b), tapFrameMax)])
	if full > tapFrameMax {
		b = b[:len(b):len(b)] // truncated: parsed as far as it goes
	}
	t.mu.Lock()
	t.frames = append(t.frames, tapFrame{conn: conn, response: response, at: now, b: b})
	t.mu.Unlock()
}

// take returns the spans answered since the last call, in the order their frames came (a
// request still waiting for its response comes with a later call).
func (t *tap) take() []tapSpan {
	t.mu.Lock()
	frames := t.frames
	t.frames = nil
	t.mu.Unlock()
	var done []tapSpan
	for _, f := range frames {
		if !f.response {
			t.request(f)
			continue
		}
		if s, ok := t.response(f); ok {
			done = append(done, s)
		}
	}
	return done
}

// request notes a request frame.
func (t *tap) request(f tapFrame) {
	r := kbin.Reader{Src: f.b}
	key, version, corr := r.Int16(), r.Int16(), r.Int32()
	client := r.NullableString()
	if r.Complete() != nil {
		return
	}
	span := tapSpan{Conn: f.conn, Key: key, Recv: f.at, corr: corr}
	if client != nil {
		span.Client = *client
	}
	if req := kmsg.RequestForKey(key); req != nil {
		req.SetVersion(version)
		if req.IsFlexible() {
			kmsg.SkipTags(&r)
		}
		if req.ReadFrom(r.Src) == nil {
			span.On = t.about(req)
			if fr, ok := req.(*kmsg.FetchRequest); ok && fr.MaxWaitMillis == 0 {
				span.NoWait = true
			}
		}
	}
	k := connCorr{f.conn, corr}
	t.sent[k] = keyVersion{key, version}
	t.pending[k] = len(t.open)
	t.open = append(t.open, span)
}

// response matches a response frame with its request and returns the span, with what Fetch
// and Metadata answers say (records; topic ids).
func (t *tap) response(f tapFrame) (tapSpan, bool) {
	if len(f.b) < 4 {
		return tapSpan{}, false
	}
	k := connCorr{f.conn, int32(binary.BigEndian.Uint32(f.b))}
	kv, ok := t.sent[k]
	i, open := t.pending[k]
	delete(t.sent, k)
	delete(t.pending, k)
	if !ok || !open {
		return tapSpan{}, false
	}
	span := t.open[i]
	t.open[i] = tapSpan{} // answered: dropped below
	span.Sent = f.at
	if kv.key == int16(kmsg.Fetch) || kv.key == int16(kmsg.Metadata) {
		res := kmsg.ResponseForKey(kv.key)
		res.SetVersion(kv.version)
		r := kbin.Reader{Src: f.b[4:]}
		if res.IsFlexible() {
			kmsg.SkipTags(&r)
		}
		err := res.ReadFrom(r.Src)
		switch res := res.(type) {
		case *kmsg.FetchResponse:
			span.Records = err != nil && len(f.b) >= tapFrameMax
			for _, tp := range res.Topics {
				for _, p := range tp.Partitions {
					span.Records = span.Records || len(p.RecordBatches) > 0
				}
			}
		case *kmsg.MetadataResponse:
			for _, tp := range res.Topics {
				if tp.Topic != nil && tp.TopicID != [16]byte{} {
					t.topics[tp.TopicID] = *tp.Topic
				}
			}
		}
	}
	t.compactOpen()
	return span, true
}

// compactOpen drops the answered spans from the open list once they are most of it.
func (t *tap) compactOpen() {
	if len(t.open) < 64 || len(t.pending) > len(t.open)/2 {
		return
	}
	var open []tapSpan
	t.pending = map[connCorr]int{}
	for _, s := range t.open {
		if s.Recv != 0 {
			t.pending[connCorr{s.Conn, s.corr}] = len(open)
			open = append(open, s)
		}
	}
	t.open = open
}

type tapListener struct {
	net.Listener
	t *tap
}

func (l *tapListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	l.t.mu.Lock()
	l.t.conns++
	id := l.t.conns
	l.t.mu.Unlock()
	return &tapConn{Conn: c, t: l.t, id: id}, nil
}

// tapConn cuts the bytes read from and written to one connection into frames. The broker
// reads one request at a time and writes each response whole; reads and writes run in two
// goroutines, each with its own buffer.
type tapConn struct {
	net.Conn
	t       *tap
	id      int
	in, out []byte
}

func (c *tapConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 {
		c.in = c.cut(append(c.in, p[:n]...), false)
	}
	return n, err
}

func (c *tapConn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	if n > 0 {
		c.out = c.cut(append(c.out, p[:n]...), true)
	}
	return n, err
}

// cut records the whole frames at the start of buf and returns the rest.
func (c *tapConn) cut(buf []byte, response bool) []byte {
	now := time.Now().UnixNano()
	for len(buf) >= 4 {
		size := int(binary.BigEndian.Uint32(buf))
		if len(buf) < 4+size {
			break
		}
		c.t.frame(c.id, response, buf[4:4+size], now)
		buf = buf[4+size:]
	}
	return append([]byte(nil), buf...)
}

// about names what req is about: its topics, or its group.
func (t *tap) about(req kmsg.Request) string {
	var names []string
	topic := func(name string, id [16]byte) {
		if name == "" && id != [16]byte{} {
			name = t.topics[id]
		}
		names = append(names, name)
	}
	switch r := req.(type) {
	case *kmsg.ProduceRequest:
		for _, x := range r.Topics {
			topic(x.Topic, x.TopicID)
		}
	case *kmsg.FetchRequest:
		for _, x := range r.Topics {
			topic(x.Topic, x.TopicID)
		}
	case *kmsg.ListOffsetsRequest:
		for _, x := range r.Topics {
			topic(x.Topic, [16]byte{})
		}
	case *kmsg.MetadataRequest:
		for _, x := range r.Topics {
			if x.Topic != nil {
				topic(*x.Topic, [16]byte{})
			}
		}
	case *kmsg.FindCoordinatorRequest:
		names = append(names, r.CoordinatorKey)
		names = append(names, r.CoordinatorKeys...)
	case *kmsg.OffsetCommitRequest:
		names = append(names, r.Group)
	case *kmsg.OffsetFetchRequest:
		names = append(names, r.Group)
	case *kmsg.HeartbeatRequest:
		names = append(names, r.Group)
	case *kmsg.DescribeGroupsRequest:
		names = append(names, r.Groups...)
	case *kmsg.DeleteGroupsRequest:
		names = append(names, r.Groups...)
	case *kmsg.OffsetDeleteRequest:
		names = append(names, r.Group)
	}
	return strings.Join(names, ",")
}

// serveTapCommands answers the driver's commands on the broker child's stdin until it closes:
// "tap" writes the spans recorded since the last one, one JSON object per line, then "end".
func serveTapCommands(t *tap, stdin io.Reader, stdout io.Writer) {
	in := bufio.NewScanner(stdin)
	w := bufio.NewWriter(stdout)
	for in.Scan() {
		if strings.TrimSpace(in.Text()) != "tap" {
			continue
		}
		for _, s := range t.take() {
			b, _ := json.Marshal(s)
			w.Write(b)
			w.WriteByte('\n')
		}
		fmt.Fprintln(w, "end")
		w.Flush()
	}
}
