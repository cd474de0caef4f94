package kafkaio

import (
	"context"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/offsetagent/offsetagent/internal/alloctest"
)

// HashPartition picks the partition a new kafka.Hash picks (the Writer's balancer of the
// records the agent's clients produce, whose partitions the crash tests expect), for nil,
// empty and random keys over partition counts whose FNV sums run negative as int32.
func TestHashPartitionMatchesKafkaHash(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	keys := [][]byte{nil, {}, []byte("connector-c1"), []byte("target-state-c1")}
	for range 2000 {
		k := make([]byte, rng.IntN(40))
		for i := range k {
			k[i] = byte(rng.IntN(256))
		}
		keys = append(keys, k)
	}
	for _, n := range []int{1, 2, 3, 7, 25, 50, 1000} {
		parts := make([]int, n)
		for i := range parts {
			parts[i] = i
		}
		for _, k := range keys {
			want := (&kafka.Hash{}).Balance(kafka.Message{Key: k}, parts...)
			got := HashPartition(k, n)
			if k == nil {
				got = 0 // route's placement of a nil key
			}
			if gotS := HashPartition(string(k), n); gotS != got && k != nil {
				t.Fatalf("key %q of %d partitions: %d as bytes, %d as a string", k, n, got, gotS)
			}
			if got != want {
				t.Fatalf("key %q of %d partitions: partition %d, kafka.Hash gives %d", k, n, got, want)
			}
		}
	}
}

// Routing a keyed record allocates nothing for its partition: three allocations, five with
// kafka.Hash (a slice of the partitions, the Hash).
func TestRouteKeyedAllocations(t *testing.T) {
	p := &Producer{leaders: &leaderCache{m: map[string]cachedLeaders{"t": {leaders: make([]int, 25), at: time.Now()}}}}
	msgs := []kafka.Message{{Topic: "t", Partition: -1, Key: []byte("connector-c1"), Value: []byte("{}")}}
	owner, at := make([]*produceItem, 1), make([]int, 1)
	fail := func(_ int, err error) { t.Fatal(err) }
	g := new(answerGroup)
	allocs := alloctest.Least(100, func() {
		g.done = nil
		p.route(context.Background(), msgs, owner, nil, at, g, fail)
	})
	if allocs > 3 {
		t.Fatalf("%v allocations", allocs)
	}
	if want := (&kafka.Hash{}).Balance(msgs[0], make([]int, 25)...); owner[0].partition != int32(want) {
		t.Fatalf("partition %d, kafka.Hash gives %d", owner[0].partition, want)
	}
}
