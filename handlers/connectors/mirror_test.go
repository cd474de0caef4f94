package connectors

import "testing"

func TestMirrorSource(t *testing.T) {
	requireValidation(t, "org.apache.kafka.connect.mirror.MirrorSourceConnector", []validationCase{
		{name: "valid", offsets: `[{"partition":{"cluster":"A","partition":0,"topic":"orders"},"offset":{"offset":41}}]`},
		{name: "tombstone for garbage", offsets: `[{"partition":{"x":1},"offset":null},{"partition":null}]`},
		{name: "partition beyond int truncates like intValue", offsets: `[{"partition":{"cluster":"A","partition":-4294967296,"topic":"t"},"offset":{"offset":0}}]`},
		{name: "null partition", offsets: `[{"partition":null,"offset":{"offset":1}}]`, code: 500, msg: "Source partitions may not be null"},
		{
			name: "missing cluster", offsets: `[{"partition":{"topic":"orders","partition":0},"offset":{"offset":1}}]`, code: 500,
			msg: "Source partition {partition=0, topic=orders} is missing the 'cluster' key, which is required",
		},
		{
			name: "cluster not a string", offsets: `[{"partition":{"topic":"orders","partition":0,"cluster":5},"offset":{"offset":1}}]`, code: 500,
			msg: "Source partition {cluster=5, partition=0, topic=orders} has an invalid value 5 for the 'cluster' key, which must be a string",
		},
		{
			name: "topic null", offsets: `[{"partition":{"topic":null,"partition":0,"cluster":"A"},"offset":{"offset":1}}]`, code: 500,
			msg: "Source partition {cluster=A, partition=0, topic=null} has an invalid value null for the 'topic' key, which must be a string",
		},
		{
			name: "missing partition", offsets: `[{"partition":{"topic":"t","cluster":"A"},"offset":{"offset":1}}]`, code: 500,
			msg: "Source partition {cluster=A, topic=t} is missing the 'partition' key, which is required",
		},
		{
			name: "partition a string", offsets: `[{"partition":{"topic":"t","partition":"0","cluster":"A"},"offset":{"offset":1}}]`, code: 500,
			msg: "Source partition {cluster=A, partition=0, topic=t} has an invalid value 0 for the 'partition' key, which must be an integer",
		},
		{
			name: "partition beyond int", offsets: `[{"partition":{"topic":"t","partition":2147483648,"cluster":"A"},"offset":{"offset":1}}]`, code: 500,
			msg: "Source partition {cluster=A, partition=2147483648, topic=t} has an invalid value 2147483648 for the 'partition' key, which must be an integer",
		},
		{
			name: "partition a double", offsets: `[{"partition":{"topic":"t","partition":1.0,"cluster":"A"},"offset":{"offset":1}}]`, code: 500,
			msg: "Source partition {cluster=A, partition=1.0, topic=t} has an invalid value 1.0 for the 'partition' key, which must be an integer",
		},
		{
			name: "negative partition", offsets: `[{"partition":{"topic":"t","partition":-1,"cluster":"A"},"offset":{"offset":1}}]`, code: 500,
			msg: "Source partition {cluster=A, partition=-1, topic=t} has an invalid value -1 for the 'partition' key, which cannot be negative",
		},
		{
			name: "offset without offset key", offsets: `[{"partition":{"topic":"t","partition":1,"cluster":"A"},"offset":{"o":1}}]`, code: 500,
			msg: "Source offset {o=1} for source partition {cluster=A, partition=1, topic=t} is missing the 'offset' key, which is required",
		},
		{
			name: "offset a string", offsets: `[{"partition":{"topic":"t","partition":1,"cluster":"A"},"offset":{"offset":"5"}}]`, code: 500,
			msg: "Source offset {offset=5} for source partition {cluster=A, partition=1, topic=t} has an invalid value 5 for the 'offset' key, which must be an integer",
		},
		{
			name: "negative offset", offsets: `[{"partition":{"topic":"t","partition":1,"cluster":"A"},"offset":{"offset":-2}}]`, code: 500,
			msg: "Source offset {offset=-2} for source partition {cluster=A, partition=1, topic=t} has an invalid value -2 for the 'offset' key, which cannot be negative",
		},
	})
}

func TestMirrorCheckpoint(t *testing.T) {
	requireValidation(t, "MirrorCheckpointConnector", []validationCase{
		{name: "valid", offsets: `[{"partition":{"group":"g","topic":"t","partition":3},"offset":{"offset":0}}]`},
		{name: "null partition", offsets: `[{"offset":{"offset":0}}]`, code: 500, msg: "Source partitions may not be null"},
		{
			name: "missing group", offsets: `[{"partition":{"topic":"t","partition":3},"offset":{"offset":0}}]`, code: 500,
			msg: "Source partition {partition=3, topic=t} is missing the 'group' key, which is required",
		},
		{
			name: "negative partition", offsets: `[{"partition":{"group":"g","topic":"t","partition":-3},"offset":{"offset":0}}]`, code: 500,
			msg: "Source partition {partition=-3, topic=t, group=g} has an invalid value -3 for the 'partition' key, which cannot be negative",
		},
		{
			name: "offset not zero", offsets: `[{"partition":{"group":"g","topic":"t","partition":3},"offset":{"offset":7}}]`, code: 500,
			msg: "Source offset {offset=7} for source partition {partition=3, topic=t, group=g} has an invalid value 7 for the 'offset' key; the only accepted value is 0",
		},
		{
			name: "offset a double", offsets: `[{"partition":{"group":"g","topic":"t","partition":3},"offset":{"offset":0.0}}]`, code: 500,
			msg: "Source offset {offset=0.0} for source partition {partition=3, topic=t, group=g} has an invalid value 0.0 for the 'offset' key, which must be an integer",
		},
	})
}

func TestMirrorHeartbeat(t *testing.T) {
	requireValidation(t, "MirrorHeartbeat", []validationCase{
		{name: "valid", offsets: `[{"partition":{"targetClusterAlias":"B","sourceClusterAlias":"A"},"offset":{"offset":0}}]`},
		{name: "no partition key needed", offsets: `[{"partition":{"targetClusterAlias":"B","sourceClusterAlias":"A","partition":-1},"offset":{"offset":0}}]`},
		{
			name: "missing target", offsets: `[{"partition":{"sourceClusterAlias":"A"},"offset":{"offset":0}}]`, code: 500,
			msg: "Source partition {sourceClusterAlias=A} is missing the 'targetClusterAlias' key, which is required",
		},
		{
			name: "source alias not a string", offsets: `[{"partition":{"sourceClusterAlias":true,"targetClusterAlias":"B"},"offset":{"offset":0}}]`, code: 500,
			msg: "Source partition {sourceClusterAlias=true, targetClusterAlias=B} has an invalid value true for the 'sourceClusterAlias' key, which must be a string",
		},
		{
			name: "offset not zero", offsets: `[{"partition":{"sourceClusterAlias":"A","targetClusterAlias":"B"},"offset":{"offset":1}}]`, code: 500,
			msg: "Source offset {offset=1} for source partition {sourceClusterAlias=A, targetClusterAlias=B} has an invalid value 1 for the 'offset' key; the only accepted value is 0",
		},
	})
}
