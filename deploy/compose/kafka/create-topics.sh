#!/bin/bash
# Creates the topics of the compose setup. Connect's internal topics must be compacted and its
# config topic must have exactly one partition; the names must match
# connect/connect-distributed.properties and the OFFSETAGENT_* topics in docker-compose.yml
# (deploy_test checks both).
set -euo pipefail

create() { # topic partitions cleanup.policy [topic-config ...]
  local args=(--topic "$1" --partitions "$2" --replication-factor 1 --config "cleanup.policy=$3")
  for c in "${@:4}"; do args+=(--config "$c"); done
  /opt/kafka/bin/kafka-topics.sh --bootstrap-server "${BOOTSTRAP_SERVERS}" --create --if-not-exists "${args[@]}"
}

create connect-configs 1 compact
create connect-offsets 25 compact
create connect-status 5 compact
# Requests up to OFFSETAGENT_MAX_REQUEST_BYTES (docker-compose.yml) plus 1 MiB of headers and
# batch overhead, as the agent creates the topic itself.
create connect-offset-requests 3 delete max.message.bytes=17825792
create connect-offset-results 3 delete
