#!/usr/bin/env bash
# Regenerates ../mm2-goldens.json with MirrorMaker 2's own classes (Kafka's connect-mirror and
# connect-mirror-client from Maven Central) on a JDK 17+. Run from anywhere; needs mvn and javac.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
version=${KAFKA_VERSION:-4.3.1}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for a in org.apache.kafka:connect-mirror:$version org.apache.kafka:connect-mirror-client:$version \
         org.apache.kafka:kafka-clients:$version org.slf4j:slf4j-api:1.7.36; do
  mvn -q dependency:copy -Dartifact="$a" -DoutputDirectory="$work/lib" >/dev/null
done
javac -nowarn -cp "$work/lib/*" -d "$work/classes" "$here/Golden.java"
java -cp "$work/classes:$work/lib/*" org.apache.kafka.connect.mirror.Golden > "$here/../mm2-goldens.json"
echo "wrote $here/../mm2-goldens.json (Kafka $version)"
