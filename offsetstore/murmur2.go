package offsetstore

// Murmur2 is Kafka's murmur2 (32-bit MurmurHash2, seed 0x9747b28c) as
// org.apache.kafka.common.utils.Utils.murmur2 computes it. The Java code reads the tail bytes
// through a switch that falls through, which the tail handling below reproduces.
func Murmur2(data []byte) int32 {
	const (
		m    = uint32(0x5bd1e995)
		r    = 24
		seed = uint32(0x9747b28c)
	)
	length := len(data)
	h := seed ^ uint32(int32(length))
	blocks := length / 4
	for i := 0; i < blocks; i++ {
		j := i * 4
		k := uint32(data[j]) | uint32(data[j+1])<<8 | uint32(data[j+2])<<16 | uint32(data[j+3])<<24
		k *= m
		k ^= k >> r
		k *= m
		h *= m
		h ^= k
	}
	tail := length &^ 3
	switch length % 4 {
	case 3:
		h ^= uint32(data[tail+2]) << 16
		h ^= uint32(data[tail+1]) << 8
		h ^= uint32(data[tail])
		h *= m
	case 2:
		h ^= uint32(data[tail+1]) << 8
		h ^= uint32(data[tail])
		h *= m
	case 1:
		h ^= uint32(data[tail])
		h *= m
	}
	h ^= h >> 13
	h *= m
	h ^= h >> 15
	return int32(h)
}

// PartitionFor is the Java client's default partitioner for a keyed record,
// (murmur2(key) & 0x7fffffff) % numPartitions (BuiltInPartitioner.partitionForKey). Connect's
// internal producers use it, so a Go writer must pick the same partition explicitly: the
// offsets store keeps the last value per key only within the order it consumes, so one key in
// two partitions is never merged by compaction. numPartitions must be positive; a
// non-positive count yields 0 rather than a division panic.
func PartitionFor(key []byte, numPartitions int) int {
	if numPartitions <= 0 {
		return 0
	}
	return int(uint32(Murmur2(key))&0x7fffffff) % numPartitions
}
