#!/bin/bash
# Creates the topics of the compose setup. Connect's internal topics must be compacted and its
# config topic must have exactly one partition; the names must match
# connect/connect-distributed.properties and the OFFSETAGENT_* topics in docker-compose.yml
# (deploy_test checks both).
set -euo pipefail

create() { # topic partitions cleanup.policy
  /opt/kafka/bin/kafka-topics.sh --bootstrap-server "${BOOTSTRAP_SERVERS}" --create --if-not-exists \
    --topic "$1" --partitions "$2" --replication-factor 1 --config "cleanup.policy=$3"
}

create connect-configs 1 compact
create connect-offsets 25 compact
create connect-status 5 compact
create connect-offset-requests 3 delete
create connect-offset-results 3 delete
