#!/usr/bin/env bash
# The default test run: lint (ruff, mypy, sqlfluff) then pytest. Prints pytest's summary line;
# pytest's exit code 5 (no tests collected) counts as a failure of the run only when
# tests were expected, which they always are here.
set -uo pipefail
cd "$(dirname "$0")/.."
export PYSPARK_PYTHON="$PWD/.venv/bin/python"
export SPARK_LOCAL_IP=127.0.0.1
export DBT_SEND_ANONYMOUS_USAGE_STATS=false

status=0
echo "== ruff"
.venv/bin/ruff check . || status=1
echo "== mypy"
.venv/bin/mypy || status=1
if [ -f .sqlfluff ]; then
  echo "== sqlfluff lint"
  paths=()
  for d in models macros analyses snapshots tests/dbt; do [ -d "$d" ] && paths+=("$d"); done
  # .sqlfluff's dbt templater compiles on the in-process `session` target: a local Spark whose
  # Derby metastore lives under $LAKEHOUSE_HOME/session and admits one JVM at a time, so
  # each lint gets its own (concurrent runs in one checkout would collide otherwise).
  lint_home=$(mktemp -d)
  LAKEHOUSE_HOME="$lint_home" .venv/bin/sqlfluff lint "${paths[@]}" --disable-progress-bar || status=1
  rm -rf "$lint_home"
fi
echo "== pytest $*"
.venv/bin/python -m pytest --durations=25 "$@"
rc=$?
if [ "$rc" = 5 ]; then
  echo "pytest collected no tests (exit 5)"
  rc=1
fi
[ "$rc" = 0 ] || status=1
exit "$status"
