// Package mm2 translates a sink connector's consumer-group offsets from Kafka cluster A to
// cluster B across MirrorMaker 2, and says per partition how exact the result is. It owns:
//
//   - the byte layouts of MM2's internal topics (docs/mirrormaker2.md, "Checkpoint records" and
//     "Offset-sync records"): checkpoints (Checkpoint, DecodeCheckpoint) and offset syncs
//     (OffsetSync, DecodeOffsetSync), big-endian Kafka protocol types with
//     no version header except the checkpoint value's INT16 0. Keys are read strictly
//     (trailing bytes refused); values tolerate trailing bytes, as Java's Schema.read does;
//     a checkpoint value with a version other than 0 and a record a Connect converter
//     wrapped (first byte '{' or '"') are refused. Errors are *FormatError with a Reason;
//   - the replication policies (Policy): the name of A's topics on B (default:
//     "<alias><sep><topic>", identity: unchanged), the checkpoints and offset-syncs topic
//     names, and the rewrite of a sink's `topics` and `topics.regex` (its DLQ is left alone);
//     a `topics.regex` is Java's, and is rewritten only where Java reads the rewritten pattern
//     as the original behind the prefix, else refused (internal/javaregex's AfterPrefix, with
//     the one reader of Java's syntax the filters use too);
//   - the translation (Translator): reading B's `<alias>.checkpoints.internal`, waiting for
//     checkpoints that are missing or moving, a verdict per partition, the group-filter trap,
//     replay bounds from the offset syncs, and the --exact refinement;
//   - the way back (Translator.Back, back.go): a sink group's committed offsets on B's copies
//     carried to A's originals for a rollback, by the replication policy's inverse
//     (Policy.UpstreamTopic), a cut below the offset (an offset sync of the A->B flow, or a
//     pair the caller knows) and the count of B's records from it, which bound where the
//     original of B's last consumed record can be on A, and that record searched for there as
//     --exact does forwards; a verdict per partition, carried or not_carried with why. Topics
//     B produced itself go through the checkpoints of a B->A flow on A, when one runs
//     (Policy.Reverse). back.go says why the bound holds, read from MirrorMaker 2's source,
//     and when it does not.
//   - MM2's health for a group (Health, with the Setup ReadSetup finds in MM2's connector
//     configs on B, and the checkpoint connectors' status when the caller read it): why its
//     checkpoints will not come (the group filter, the topic filters of the checkpoint and
//     source connectors, checkpoints or offset syncs switched off, the checkpoint connector
//     failed or stopped, checkpoint records that cannot be read, checkpoints past a maximum
//     age), so that a caller refuses a sink before stopping anything instead of waiting for
//     them (health.go says how it decides). MM2's filters are judged as MM2 judges them
//     (filter.go): Connect's LIST parsing, the entries joined by | into one Java regex,
//     evaluated by internal/javaregex; a pattern that cannot be evaluated refuses the sink
//     with the pattern and why.
//
// A migration command calls it like this, once per run and then once per sink connector:
//
//	tr, err := mm2.NewTranslator(mm2.Config{
//		Target: kafkaio.Options{Brokers: toBrokers},   // --to-brokers
//		Source: kafkaio.Options{Brokers: fromBrokers}, // --from-brokers, for --exact
//		Policy: mm2.Policy{Kind: policy, SourceAlias: alias, Separator: sep},
//		Wait:   checkpointWait, // --checkpoint-wait
//		Exact:  exact,          // --exact
//	})
//	committed, err := mm2.SinkPartitions(c.Offsets)              // A's sink offsets, KIP-875 shape
//	tr2, err := tr.TranslateGroup(ctx, c.Group, committed)
//	// tr2.ConnectorOffsets(): the initial_offsets for B (KIP-875 shape, missing ones left out);
//	// tr2.Offsets(): the same by renamed partition;
//	// tr2.Report: the report's "translation" object; tr2.AllExact(): no replay, none missing;
//	// tr2.GroupFilterTrap: MM2 does not checkpoint this group, and how to change that.
//	config, rewrite, err := policy.RewriteConfig(cfg) // or RewriteTopics / RewriteTopicsRegex per entry
//
// and a rollback, with A's brokers as Source and the offset syncs where MM2 keeps them:
//
//	back, err := tr.Back(ctx, groupOnB, committedOnB, cuts...) // cuts: the cutover's exact pairs
//	// back.Offsets(): the offsets to commit on A, by partition of A, of the carried partitions;
//	// back.Partitions[i].Reason: how each was found, or why it was not.
//
// Verdicts (see docs/migration.md, "Across MirrorMaker 2"): exact when the checkpoint's upstreamOffset equals the committed
// offset g (and, when the offset syncs are read, they show no replay) or --exact found A's
// record g-1 on B; replay when the checkpoint is older, with the most records delivered again
// when the offset syncs allow computing it; missing when no checkpoint is usable (none, stale
// with upstreamOffset > g, refused, or past what the syncs allow), with the reason.
//
// Left to callers: reading A's groups and connectors, deciding that replay or missing fails a
// connector (--allow-replay), what a partition that is not carried back means for A (it
// delivers again what B delivered since), building KIP-995 bodies, and writing anything to
// either cluster: this package only reads.
package mm2
