# TICKIT CDC lakehouse. The two commands a newcomer needs: `make demo` and `make test`.
SHELL := /bin/bash
VENV := .venv
LAKEHOUSE := $(VENV)/bin/lakehouse

.PHONY: help setup demo test test-slow test-real-sources test-reliability test-cluster test-all lint bench bench-soak down clean

help:
	@echo "make demo              set up everything, then run the whole pipeline on the embedded default"
	@echo "make test              set up everything, then lint and run the default test suite"
	@echo "make test-slow         the slow suites (scale 1.0, crash trials, Airflow import)"
	@echo "make test-real-sources real Debezium from real PostgreSQL and MariaDB through Kafka into silver"
	@echo "make test-reliability  the fault-injection suite with its figures"
	@echo "make test-cluster      off one machine: the lake on S3 (moto), S3 faults, a standalone Spark cluster, a shared Hive Metastore"
	@echo "make bench             the benchmarks (prints medians and ratios)"
	@echo "make bench-soak        500 micro-batches of continuous ingestion (latency, timeline growth)"
	@echo "make down              stop every service this project started (same as 'lakehouse down')"
	@echo "make clean             make down, then remove .lakehouse/ state and dbt target/"

setup:
	@bash scripts/setup.sh

demo: setup
	@$(LAKEHOUSE) demo

test: setup
	@bash scripts/run_tests.sh

test-slow: setup
	@bash scripts/run_tests.sh -m slow

test-real-sources: setup
	@bash scripts/run_tests.sh -m slow tests/real_sources

test-reliability: setup
	@bash scripts/run_tests.sh -m reliability

test-cluster: setup
	@bash scripts/run_tests.sh -m cluster

test-all: setup
	@bash scripts/run_tests.sh -m ""

# ruff, mypy, import rules, the dbt project's rules (a manifest check), sqlfluff.
# sqlfluff: its own LAKEHOUSE_HOME per run (the dbt templater's local Spark metastore, see scripts/run_tests.sh)
lint: setup
	@$(VENV)/bin/ruff check . && $(VENV)/bin/mypy && $(VENV)/bin/lint-imports && \
	  $(VENV)/bin/pytest -q -p no:cacheprovider tests/dbt_project/test_dbt_rules.py && home=$$(mktemp -d) && \
	  SPARK_LOCAL_IP=127.0.0.1 LAKEHOUSE_HOME=$$home $(VENV)/bin/sqlfluff lint models macros analyses snapshots tests/dbt; \
	  status=$$?; rm -rf "$$home"; exit $$status

# bench_ingest: the JSON landing against plain Spark and the Hudi floor (warm, one JVM), and the Avro landing and the
# Kafka source beside it; bench_processes: `lakehouse ingest --once` against plain Spark as whole processes
bench: setup
	@for b in "benchmarks/bench_ingest.py --hudi-floor --avro --kafka" benchmarks/bench_processes.py benchmarks/bench_dbt.py benchmarks/bench_real_freshness.py; do \
	  echo "== $$b"; $(VENV)/bin/python $$b || exit 1; done

# 500 micro-batches of continuous ingestion (about an hour on 2 cores): latency and timeline growth
bench-soak: setup
	@$(VENV)/bin/python benchmarks/bench_soak.py

down:
	@if [ -x $(LAKEHOUSE) ]; then $(LAKEHOUSE) down; else echo "nothing to stop (no .venv)"; fi

clean:
	@if [ -x $(LAKEHOUSE) ]; then $(LAKEHOUSE) down --discard; else echo "nothing to stop (no .venv)"; fi
	rm -rf .lakehouse target logs
