#!/usr/bin/env bash
# Regenerates oracle-golden.json from oracle-input.json with the Connect oracle (a real JVM with
# Jackson; see tools/connect-oracle/Oracle.java for the protocol). The answer is
# pretty-printed so diffs stay readable. Run from anywhere:
#   python3 offsetstore/testdata/gen-input.py   # only after editing the inputs
#   bash offsetstore/testdata/gen-goldens.sh
# The committed golden came from OpenJDK 17.0.15 (Debian 17.0.15+6-Debian-1deb12u1) with
# Jackson 2.14 (libjackson2-databind-java). JDK 17's Double.toString is not always the shortest
# form that JDK 19+ prints; the inputs avoid those doubles (see javadouble_test.go).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
oracle=${ORACLE:-$here/../../tools/connect-oracle/oracle.sh}
bash "$oracle" <"$here/oracle-input.json" \
  | python3 -c 'import json,sys; json.dump(json.load(sys.stdin), sys.stdout, indent=1, ensure_ascii=False); print()' \
  >"$here/oracle-golden.json.tmp"
mv "$here/oracle-golden.json.tmp" "$here/oracle-golden.json"
echo "wrote $here/oracle-golden.json" >&2
