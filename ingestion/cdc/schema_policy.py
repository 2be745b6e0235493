"""The schema-change policy: what a source's added column or changed type does to bronze.

Each table contract names a policy (``schema_changes`` in the contract file, per system
or per table; docs/architecture.md, "Schema changes"):

* ``evolve`` (the default) never stops the stream and never drops a value. A column the
  contract lacks is added to the bronze table, after the ``_cdc_*`` columns (Hudi appends
  new columns), with the type the event's own schema gives (JSON with
  ``schemas.enable=true``, Avro) or as text when the event carries no schema; older rows
  read it as null. A type the event's schema widens (``int`` to ``bigint``, a decimal's
  precision at the same scale) widens the
  bronze column. Any other change of a column's type (narrowed, or of another kind) is
  an ``incompatible_schema`` dead letter, replayable once the contract is updated.
* ``strict``: bronze holds exactly the contract. An event carrying a column the contract
  lacks, or a type the contract's type cannot take, is an ``incompatible_schema`` dead
  letter (nothing is lost; the table's other events keep flowing).

The effective schema of a bronze table is its contract with what earlier batches evolved
(``TableContract.evolved``), read back from the table itself, so every parse worker
judges an event against what bronze holds.
"""

from __future__ import annotations

import re

EVOLVE = "evolve"
STRICT = "strict"
POLICIES = (EVOLVE, STRICT)
DEFAULT_POLICY = EVOLVE

#: Widenings bronze applies under ``evolve``: (current type, incoming type), and a decimal's
#: precision growing at the same scale (``decimal(8,2)`` -> ``decimal(10,2)``). Hudi's schema
#: evolution on write promotes these in place when the commit's schema is the batch's
#: (int -> long; decimal files of both precisions are read in the wider one, by Spark and by
#: hudi-rs: measured). A decimal whose scale changes is not a widening: its values that fit
#: the column land, the others are ``type_mismatch`` dead letters.
WIDENINGS = frozenset({("int", "bigint")})

#: The type of an added column whose events disagree (typed in one, text in another).
TEXT = "string"

_DECIMAL = re.compile(r"^decimal\((\d+),(\d+)\)\Z")
#: Spark's largest decimal precision.
MAX_PRECISION = 38


def widens(current: str, incoming: str) -> bool:
    """Whether a column of type ``current`` may become ``incoming`` under ``evolve``."""
    if (current, incoming) in WIDENINGS:
        return True
    old, new = _DECIMAL.match(current), _DECIMAL.match(incoming)
    return bool(old and new and old.group(2) == new.group(2)
                and int(old.group(1)) < int(new.group(1)) <= MAX_PRECISION)


def common_type(first: str, second: str) -> str:
    """The type that holds values of both types: the wider one, else text."""
    if first == second:
        return first
    if widens(first, second):
        return second
    if widens(second, first):
        return first
    return TEXT
