package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/segmentio/kafka-go"

	"github.com/offsetagent/offsetagent/handlers"
	"github.com/offsetagent/offsetagent/internal/jsonvalue"
)

// Claims live in the intent topic beside the intents (docs/architecture.md, "One request per
// connector at a time"). A request claims its connector by appending a claim record of its
// own (key: claimPrefix, the connector name, the request's source and id) to the partition of
// the connector's intent, and reads that partition up to its claim: the earliest claim of the
// name still in the log and unfinished wins. Kafka's order of one partition is the arbiter, the same for
// every replica. The loser tombstones its claim at once; the holder tombstones it once its
// result is out, in one batch right after its intent's tombstone (intentLog.finish). A claim is unfinished until then, or until its
// request's result is in the result topic (a replica died between the two): a claim left by a
// dead replica thus either belongs to a request that is redelivered, whose new delivery holds
// it again, or is released by the next sweep.
const claimPrefix = "\x00claim\x00"

// claimRecord is the value of a claim record.
type claimRecord struct {
	Claim         string `json:"claim"` // the connector name
	RequestID     string `json:"request_id"`
	RequestSource string `json:"request_source"`
}

// appendMessage returns the claim record's key (key's bytes) and value (the record as
// json.Marshal encodes it) in one allocation: every request writes one, and encoding/json's
// reflection and copies were most of its cost. TestClaimRecordEncoding holds the value to
// json.Marshal's.
func (c *claimRecord) appendMessage(key string) (k, v []byte) {
	b := make([]byte, 0, len(key)+len(`{"claim":"","request_id":"","request_source":""}`)+len(c.Claim)+len(c.RequestID)+len(c.RequestSource)+8)
	b = append(b, key...)
	k = b[:len(key):len(key)] // an append to the key never writes into the value
	b = jsonvalue.AppendStringHTML(append(b, `{"claim":`...), c.Claim)
	b = jsonvalue.AppendStringHTML(append(b, `,"request_id":`...), c.RequestID)
	b = jsonvalue.AppendStringHTML(append(b, `,"request_source":`...), c.RequestSource)
	b = append(b, '}')
	return k, b[len(key):]
}

// claimEntry is one live claim in the view.
type claimEntry struct {
	key    string
	offset int64
	claimRecord
}

func claimKey(name, source, id string) string {
	return claimPrefix + name + "\x00" + source + "\x00" + id
}

// applyClaimLocked applies one claim record (a claim or its tombstone) to the view.
func (il *intentLog) applyClaimLocked(m *kafka.Message) {
	key := string(m.Key)
	if m.Value == nil {
		name, ok := il.claimNames[key]
		if !ok {
			return
		}
		delete(il.claimNames, key)
		cs := il.claims[name]
		for i := range cs {
			if cs[i].key == key {
				cs = append(cs[:i:i], cs[i+1:]...)
				break
			}
		}
		if len(cs) == 0 {
			delete(il.claims, name)
		} else {
			il.claims[name] = cs
		}
		return
	}
	if _, ok := il.claimNames[key]; ok {
		return // claimed again by a redelivery: the first record keeps its place
	}
	var c claimRecord
	if own, ok := m.WriterData.(*claimRecord); ok {
		c = *own // this replica's own claim (Claim): nothing to parse
	} else if err := json.Unmarshal(m.Value, &c); err != nil || claimKey(c.Claim, c.RequestSource, c.RequestID) != key {
		return
	}
	il.claimNames[key] = c.Claim
	il.claims[c.Claim] = append(il.claims[c.Claim], claimEntry{key: key, offset: m.Offset, claimRecord: c})
}

// Claim implements handlers.Claims.
func (il *intentLog) Claim(ctx context.Context, name, source, id string) (*handlers.ClaimHolder, error) {
	key := claimKey(name, source, id)
	rec := &claimRecord{Claim: name, RequestID: id, RequestSource: source}
	k, v := rec.appendMessage(key)
	w, err := il.writeFor(ctx, name, kafka.Message{Key: k, Value: v, WriterData: rec})
	if err != nil {
		return nil, err
	}
	// Only the records before the claim in its partition matter, and the Produce response
	// gives the claim's offset: once the view has applied the partition up to the claim, it
	// holds every earlier claim of the name (and the name's intent), as every replica sees
	// them. The claim itself is applied from the written bytes, not fetched again.
	if err := il.log.SyncTo(ctx, w.Partition(0), w.Offset(0)+1); err != nil {
		return nil, err
	}
	holder := il.holder(name, key)
	if holder != nil && il.syncResults != nil {
		// An earlier claim holds the name unless its request's result is out: the result
		// view may not have read a result another replica published a moment ago (it reads
		// the topic quietly), so ask once more after reading the topic to its end.
		if err := il.syncResults(ctx); err != nil {
			return nil, err
		}
		holder = il.holder(name, key)
	}
	if holder == nil {
		return nil, nil
	}
	if err := il.release(ctx, name, source, id); err != nil {
		return nil, fmt.Errorf("withdraw claim: %w", err)
	}
	return &handlers.ClaimHolder{RequestID: holder.RequestID, RequestSource: holder.RequestSource}, nil
}

// holder returns the earliest unfinished claim of name before key, nil when key itself is the
// earliest. Earlier claims whose request has its result out are finished: their holder died
// before removing them.
func (il *intentLog) holder(name, key string) *claimEntry {
	il.mu.Lock()
	defer il.mu.Unlock()
	for i := range il.claims[name] {
		c := il.claims[name][i]
		if c.key == key {
			return nil
		}
		if il.resultOut != nil && il.resultOut(c.RequestSource, c.RequestID) {
			continue
		}
		return &c
	}
	return nil
}

// release tombstones the claim of request (source, id) on name, if the view holds it.
func (il *intentLog) release(ctx context.Context, name, source, id string) error {
	key := claimKey(name, source, id)
	il.mu.Lock()
	_, ok := il.claimNames[key]
	il.mu.Unlock()
	if !ok {
		return nil
	}
	if _, err := il.writeFor(ctx, name, kafka.Message{Key: []byte(key)}); err != nil {
		return err
	}
	il.mu.Lock()
	il.applyClaimLocked(&kafka.Message{Key: []byte(key)})
	il.mu.Unlock()
	return nil
}

// releaseRetrying is release with a few retries of transient errors.
func (il *intentLog) releaseRetrying(ctx context.Context, name, source, id string) error {
	return retryAgentWrite(ctx, func(ctx context.Context) error { return il.release(ctx, name, source, id) })
}

// staleClaims returns the claims whose request has its result out.
func (il *intentLog) staleClaims(resultOut func(source, id string) bool) []claimEntry {
	il.mu.Lock()
	defer il.mu.Unlock()
	var stale []claimEntry
	for _, cs := range il.claims {
		for _, c := range cs {
			if resultOut(c.RequestSource, c.RequestID) {
				stale = append(stale, c)
			}
		}
	}
	return stale
}

// isClaimKey tells claim records from intents (whose key is a connector name, which never
// holds a control character: validate_config refuses it).
func isClaimKey(key []byte) bool { return strings.HasPrefix(string(key), claimPrefix) }

var errNoPartitions = errors.New("intent topic not loaded yet")
