// Package agent is offsetagent's runtime: it consumes request events from the request topic
// as one member of a consumer group, dispatches them to bounded per-connector lanes (requests
// for one connector run in order, different connectors in parallel), runs each through
// handlers.Creator, publishes its result event, and commits a request's offset only after the
// broker acknowledged its result and every earlier request of the partition is done. It also
// serves /metrics, /healthz and /readyz. Its group membership advertises the Connect cluster
// it writes, its topics and the sources it accepts (advertise.go), and it refuses every
// request while its group mixes two Connect clusters. It keeps its own topics' logs (the
// intents and claims that roll back an interrupted request, the results that make a
// redelivered request a duplicate), bounds the bytes of the requests it holds
// (MaxInflightBytes) and probes its own permissions, keeping /readyz 503 while one is missing.
//
// How its clients are configured is not its concern: Config.Security's type, the reading of
// OFFSETAGENT_CONNECT_CONFIG and the connections built from both belong to package
// internal/clientconfig, which New calls (connect.go for the Connect REST client).
//
// The caller (cmd/offsetagent) owns the environment, flags, signals and process exit; New
// takes plain values, a *slog.Logger and a prometheus.Registerer so that tests can embed the
// agent.
package agent
