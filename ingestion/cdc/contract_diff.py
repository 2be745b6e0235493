"""What a table's events carry that its contract does not say (``lakehouse contracts diff``).

The events' side is a ``GeneratedTable``: the contract ``contract_generator`` writes from
one schema-carrying event (the newest one, so a column added at the source shows). The
comparison is by column name: a column the events have and the contract lacks (``+``),
one the contract has and the events lack (``-``: dropped at the source, or renamed, which
shows as one ``-`` and one ``+``), one whose type differs (``~``), and a different primary
key. Column order is not compared: new source columns are appended in bronze anyway.
"""

from __future__ import annotations

from dataclasses import dataclass

from ingestion.cdc.contract_generator import GeneratedTable
from ingestion.cdc.contracts import TableContract


@dataclass(frozen=True)
class ContractDifference:
    kind: str  # "+" in the events only, "-" in the contract only, "~" a type change, "key" the primary key
    column: str | None
    contract: str | None  # the contract's type (or key)
    events: str | None  # the events' type (or key)

    def line(self) -> str:
        if self.kind == "+":
            return f"+ {self.column} {self.events}  (in the events, not in the contract)"
        if self.kind == "-":
            return f"- {self.column} {self.contract}  (in the contract, not in the events)"
        if self.kind == "~":
            return f"~ {self.column} {self.contract} -> {self.events}"
        return f"primary key ({self.contract}) -> ({self.events})"


def contract_differences(contract: TableContract, events: GeneratedTable) -> list[ContractDifference]:
    """The differences between ``contract`` and the contract its events imply, in column order."""
    declared = {c.name: c.type for c in contract.columns}
    seen = {c.name: c.type for c in events.columns}
    out = [ContractDifference("-", name, kind, None) for name, kind in declared.items() if name not in seen]
    for name, kind in seen.items():
        if name not in declared:
            out.append(ContractDifference("+", name, None, kind))
        elif declared[name] != kind:
            out.append(ContractDifference("~", name, declared[name], kind))
    if tuple(contract.primary_key) != tuple(events.primary_key):
        out.append(ContractDifference("key", None, ", ".join(contract.primary_key), ", ".join(events.primary_key)))
    return out
