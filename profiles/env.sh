# Source this file (`source profiles/env.sh`) to make a plain `dbt build` use the project's
# profile and the managed Thrift server, exactly as `lakehouse dbt build` does.
_lakehouse_root="$(cd "$(dirname "${BASH_SOURCE[0]:-$0}")/.." && pwd)"
export DBT_PROFILES_DIR="$_lakehouse_root/profiles"
export DBT_PROJECT_DIR="$_lakehouse_root"
export LAKEHOUSE_HOME="${LAKEHOUSE_HOME:-$_lakehouse_root/.lakehouse}"
export LAKEHOUSE_THRIFT_HOST="${LAKEHOUSE_THRIFT_HOST:-127.0.0.1}"
export LAKEHOUSE_THRIFT_PORT="${LAKEHOUSE_THRIFT_PORT:-10000}"
export PATH="$_lakehouse_root/.venv/bin:$PATH"
unset _lakehouse_root
