"""Settings from AWS Parameter Store (``LAKEHOUSE_SSM_PREFIX``), against moto's server on 127.0.0.1.

moto stands in for SSM (no AWS here); the parameters are written with boto3 as an operator
would, then read by the ``lakehouse`` command in a child process.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import boto3
import pytest

from lakehouse.ssm import apply_parameters

LAKEHOUSE = str(Path(sys.executable).parent / "lakehouse")
PREFIX = "/tickit/lakehouse"


@pytest.fixture(scope="module")
def parameters(moto_endpoint):
    ssm = boto3.client("ssm", endpoint_url=moto_endpoint, region_name="us-east-1")
    ssm.put_parameter(Name=f"{PREFIX}/LAKEHOUSE_LANDING", Value="/nonexistent/landing-from-ssm", Type="String")
    ssm.put_parameter(Name=f"{PREFIX}/LAKEHOUSE_THRIFT_PORT", Value="10555", Type="String")
    ssm.put_parameter(Name=f"{PREFIX}/secrets/LAKEHOUSE_ALERT_WEBHOOK_URL", Value="https://hooks.example/x",
                      Type="SecureString")
    ssm.put_parameter(Name=f"{PREFIX}/UNRELATED", Value="ignored", Type="String")
    ssm.put_parameter(Name="/elsewhere/LAKEHOUSE_LAKE", Value="s3a://not-under-the-prefix", Type="String")
    return moto_endpoint


def test_parameters_under_the_prefix_fill_unset_settings_only(parameters, monkeypatch) -> None:
    monkeypatch.setenv("AWS_ENDPOINT_URL", parameters)  # boto3's client reads the process environment
    env = {"LAKEHOUSE_SSM_PREFIX": PREFIX, "LAKEHOUSE_THRIFT_PORT": "10999"}
    applied = apply_parameters(env)
    assert applied == {
        "LAKEHOUSE_LANDING": "/nonexistent/landing-from-ssm",
        "LAKEHOUSE_ALERT_WEBHOOK_URL": "https://hooks.example/x",  # SecureString, decrypted, nested path
    }
    assert env["LAKEHOUSE_THRIFT_PORT"] == "10999"  # the environment wins over Parameter Store
    assert "UNRELATED" not in env and "LAKEHOUSE_LAKE" not in env


def test_the_command_reads_its_settings_from_parameter_store(parameters, tmp_path) -> None:
    env = {**os.environ, "LAKEHOUSE_HOME": str(tmp_path / "home"), "LAKEHOUSE_SSM_PREFIX": PREFIX,
           "AWS_ENDPOINT_URL": parameters}
    env.pop("LAKEHOUSE_LANDING", None)
    result = subprocess.run([LAKEHOUSE, "ingest", "--once", "--no-sync"], env=env, capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 2, result.stderr
    assert "landing zone /nonexistent/landing-from-ssm: no topics/ directory" in result.stderr


def test_an_unreachable_parameter_store_is_one_clear_error(tmp_path) -> None:
    env = {**os.environ, "LAKEHOUSE_HOME": str(tmp_path / "home"), "LAKEHOUSE_SSM_PREFIX": PREFIX,
           "AWS_ENDPOINT_URL": "http://127.0.0.1:9", "AWS_ACCESS_KEY_ID": "testing",
           "AWS_SECRET_ACCESS_KEY": "testing", "AWS_DEFAULT_REGION": "us-east-1", "AWS_MAX_ATTEMPTS": "1"}
    result = subprocess.run([LAKEHOUSE, "thrift", "status"], env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert lines[0].startswith(f"error: cannot read SSM parameters under {PREFIX}:"), result.stderr
    assert lines[1].startswith("hint: check the AWS credentials"), result.stderr
