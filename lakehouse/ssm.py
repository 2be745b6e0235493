"""Settings from AWS Systems Manager Parameter Store, for the cluster profile.

The reference pipeline kept its brokers and buckets in Parameter Store. When
``LAKEHOUSE_SSM_PREFIX`` is set (e.g. ``/tickit/lakehouse``), every parameter under it
whose last path segment is a ``LAKEHOUSE_*`` setting name (``/tickit/lakehouse/LAKEHOUSE_LAKE``)
becomes that setting, unless the environment already sets it: flags override environment
variables, which override Parameter Store, which overrides the defaults. The values go into
``os.environ`` so every process the command starts (Spark, dbt, the scheduler's jobs)
sees the same settings. ``SecureString`` parameters are decrypted. Credentials, region
and endpoint come from the standard AWS chain (``AWS_ENDPOINT_URL`` for a local stand-in).
Other parameter names under the prefix are left alone.
"""

from __future__ import annotations

import os
from collections.abc import MutableMapping

PREFIX_VARIABLE = "LAKEHOUSE_SSM_PREFIX"
SETTING_PREFIX = "LAKEHOUSE_"


class SsmError(RuntimeError):
    """Parameter Store could not be read (the message names the prefix and the cause)."""


def read_parameters(prefix: str) -> dict[str, str]:
    """``LAKEHOUSE_*`` name -> value of every parameter under ``prefix`` (recursive, decrypted)."""
    import boto3
    from botocore.exceptions import BotoCoreError, ClientError

    path = "/" + prefix.strip("/")
    try:
        client = boto3.client("ssm")
        pages = client.get_paginator("get_parameters_by_path").paginate(
            Path=path, Recursive=True, WithDecryption=True
        )
        parameters = [p for page in pages for p in page["Parameters"]]
    except (BotoCoreError, ClientError) as exc:
        raise SsmError(f"cannot read SSM parameters under {path}: {exc}") from exc
    settings: dict[str, str] = {}
    for parameter in parameters:
        name = parameter["Name"].rsplit("/", 1)[-1]
        if name.startswith(SETTING_PREFIX) and name != PREFIX_VARIABLE:
            settings[name] = parameter["Value"]
    return settings


def apply_parameters(environ: MutableMapping[str, str] | None = None) -> dict[str, str]:
    """Put the Parameter Store settings into ``environ`` (default ``os.environ``) where unset.

    Returns the settings applied (name -> value); nothing when ``LAKEHOUSE_SSM_PREFIX`` is unset.
    """
    env = os.environ if environ is None else environ
    prefix = env.get(PREFIX_VARIABLE, "").strip()
    if not prefix:
        return {}
    applied = {name: value for name, value in read_parameters(prefix).items() if not env.get(name)}
    env.update(applied)
    return applied
