#!/usr/bin/env bash
# One-time (and idempotent) set-up of a fresh machine: Java 17, Chromium + ChromeDriver for
# the browser tests, PostgreSQL and MariaDB servers for the real sources, a Python 3.11 virtual environment with the pinned dependencies, and
# the project installed in it. Re-running only does what is missing.
set -euo pipefail
cd "$(dirname "$0")/.."

say() { printf '[setup] %s\n' "$*"; }
die() { printf '[setup] error: %s\n' "$*" >&2; exit 1; }

SUDO=""
if [ "$(id -u)" != 0 ]; then
  command -v sudo >/dev/null 2>&1 && SUDO="sudo" || SUDO=""
fi

apt_updated=0
apt_install() {
  command -v apt-get >/dev/null 2>&1 || die "apt-get not found: install $* by hand"
  if [ "$apt_updated" = 0 ]; then
    say "apt-get update"
    $SUDO apt-get update -qq || die "apt-get update failed"
    apt_updated=1
  fi
  say "apt-get install $*"
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "$@" >/dev/null \
    || die "apt-get install $* failed"
}

java_major() {
  java -version 2>&1 | sed -n 's/.*version "\([0-9]*\).*/\1/p' | head -n 1
}

# 1. Java 17 (Spark 3.5 and Hudi 1.2 run on it).
if [ -n "${JAVA_HOME:-}" ] && [ -x "$JAVA_HOME/bin/java" ]; then
  say "Java: using JAVA_HOME=$JAVA_HOME"
elif command -v java >/dev/null 2>&1 && [ "$(java_major)" -ge 17 ] 2>/dev/null; then
  say "Java: $(java -version 2>&1 | head -n 1)"
else
  apt_install openjdk-17-jre-headless
fi

# 2. Chromium + ChromeDriver (docs-site browser tests). Optional for the demo.
if [ "${LAKEHOUSE_SKIP_BROWSER:-0}" != 1 ]; then
  if ! command -v chromium >/dev/null 2>&1 || ! command -v chromedriver >/dev/null 2>&1; then
    apt_install chromium chromium-driver || say "warning: chromium not installed; browser tests will be skipped"
  fi
fi

# 2b. The real sources (lakehouse sources, lakehouse demo --real-sources, the real-sources tests)
# and the shared Hive Metastore's database (lakehouse metastore): Debian's PostgreSQL and MariaDB servers. The project runs its own instances on loopback ports
# in their own data directories; LAKEHOUSE_SKIP_SOURCES=1 skips them.
if [ "${LAKEHOUSE_SKIP_SOURCES:-0}" != 1 ]; then
  if ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then
    apt_install postgresql || say "warning: postgresql not installed; the real-sources tests and demo will fail"
  fi
  if ! command -v mariadb-install-db >/dev/null 2>&1; then
    apt_install mariadb-server || say "warning: mariadb-server not installed; the real-sources tests and demo will fail"
  fi
fi

# 3. Python virtual environment with the pinned dependencies.
# The distribution's interpreter comes first: Debian builds CPython with profile-guided and
# link-time optimisation and links libpython statically, while a self-built one (pyenv's
# default: no --enable-optimizations, a shared libpython) runs dbt's Python ~15-25% slower:
# ~0.5 s per dbt command here (0.4-0.6 s, measured in commit 3bab457). PYTHON=... overrides.
PY="${PYTHON:-}"
if [ -z "$PY" ]; then
  for candidate in /usr/bin/python3.11 python3.11 python3; do
    if command -v "$candidate" >/dev/null 2>&1; then PY="$candidate"; break; fi
  done
fi
[ -n "$PY" ] || die "no python3 found (Python 3.11 is required)"
"$PY" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else 1)' \
  || die "$PY is $("$PY" --version 2>&1); Python >= 3.11 is required"
if [ ! -x .venv/bin/python ]; then
  say "creating .venv with $PY"
  if ! "$PY" -m venv .venv; then
    # Debian's interpreter ships venv's pip bootstrap separately; a failed attempt leaves a
    # .venv without pip behind, so start again once it is installed
    rm -rf .venv
    apt_install python3-venv
    "$PY" -m venv .venv || { rm -rf .venv; die "$PY -m venv .venv failed"; }
  fi
fi

stamp=.venv/.lakehouse-installed
want=$(cat pyproject.toml constraints.txt | sha256sum | cut -d' ' -f1)
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
  say "installing Python dependencies (pinned in constraints.txt)"
  .venv/bin/python -m pip install -q --upgrade pip
  .venv/bin/python -m pip install -q -c constraints.txt -e ".[dev]" || die "pip install failed"
  echo "$want" > "$stamp"
else
  say "Python dependencies: up to date"
fi
# 4. The pinned JVM dependencies (jvm/<role>/pom.xml) from Maven Central, one directory per JVM
# role under jvm/lib/ (docs/architecture.md, "JVM dependencies"). -C: a checksum that does not
# match Maven Central's fails the set-up. Resolved again only when a pom changes.
command -v mvn >/dev/null 2>&1 || apt_install maven
for pom in jvm/*/pom.xml; do
  role=$(basename "$(dirname "$pom")")
  jvm_stamp="jvm/lib/.$role.resolved"
  jvm_want=$(sha256sum "$pom" | cut -d' ' -f1)
  if [ ! -f "$jvm_stamp" ] || [ "$(cat "$jvm_stamp")" != "$jvm_want" ]; then
    say "resolving JVM role $role from Maven Central ($pom)"
    rm -rf "jvm/lib/$role"
    if ! out=$(mvn -B -q -C -f "$pom" dependency:copy-dependencies -DoutputDirectory="../lib/$role" 2>&1); then
      printf '%s\n' "$out" | grep -E "ERROR|Could not|Checksum" | head -n 5 >&2
      die "resolving $pom failed (the lines above name the artifact): check that Maven Central is reachable, then run 'make setup' again"
    fi
    echo "$jvm_want" > "$jvm_stamp"
  fi
  .venv/bin/python -m ingestion.jvm check "$role" || die "JVM role $role is incomplete: see the error above"
done

say "ready: .venv/bin/lakehouse --help"
