#!/usr/bin/env bash
# Regenerates oracle-golden.json from oracle-input.json with the Connect oracle (a real JVM with
# Jackson; see /work/shared/tools/connect-oracle/Oracle.java for the protocol). The answer is
# pretty-printed with one entry per line so diffs stay readable. Run from anywhere:
#   bash offsetstore/testdata/gen-goldens.sh
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
oracle=${ORACLE:-/work/shared/tools/connect-oracle/oracle.sh}
bash "$oracle" <"$here/oracle-input.json" \
  | python3 -c 'import json,sys; json.dump(json.load(sys.stdin), sys.stdout, indent=1, ensure_ascii=False); print()' \
  >"$here/oracle-golden.json.tmp"
mv "$here/oracle-golden.json.tmp" "$here/oracle-golden.json"
echo "wrote $here/oracle-golden.json" >&2
