"""Table configuration: what ``.hoodie/hoodie.properties`` says, and the checks on open."""

from __future__ import annotations

import re
import zlib
from dataclasses import dataclass, field

from ingestion.hoodie.errors import HoodieError, UnsupportedTableError

TABLE_VERSION = "6"
TIMELINE_LAYOUT_VERSION = "1"
SIMPLE_KEYGEN = "org.apache.hudi.keygen.SimpleKeyGenerator"
COMPLEX_KEYGEN = "org.apache.hudi.keygen.ComplexKeyGenerator"
NONPARTITIONED_KEYGEN = "org.apache.hudi.keygen.NonpartitionedKeyGenerator"
SUPPORTED_KEYGENS = (SIMPLE_KEYGEN, COMPLEX_KEYGEN, NONPARTITIONED_KEYGEN)
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*\Z")


def table_checksum(database: str, name: str) -> str:
    """``HoodieTableConfig.generateChecksum``: CRC32 of ``<database>.<table name>``."""
    return str(zlib.crc32(f"{database}.{name}".encode()))


@dataclass(frozen=True)
class TableConfig:
    """The write configuration of one copy-on-write table.

    ``record_key_fields``: one field gives Hudi's simple key (the value), several give the
    complex key ``f1:v1,f2:v2``. ``precombine_field`` orders versions of one key (greater wins).
    ``partition_fields``: empty for a non-partitioned table; ``hive_style`` writes ``f=v`` dirs.
    """

    name: str
    record_key_fields: tuple[str, ...]
    precombine_field: str | None = None
    partition_fields: tuple[str, ...] = ()
    database: str = "default"
    hive_style: bool = True
    url_encode: bool = False
    keygen_class: str | None = None
    extra_properties: dict[str, str] = field(default_factory=dict, compare=False)

    def __post_init__(self) -> None:
        if isinstance(self.record_key_fields, str):
            object.__setattr__(self, "record_key_fields", (self.record_key_fields,))
        if isinstance(self.partition_fields, str):
            object.__setattr__(self, "partition_fields", (self.partition_fields,))
        object.__setattr__(self, "record_key_fields", tuple(self.record_key_fields))
        object.__setattr__(self, "partition_fields", tuple(self.partition_fields))
        if not _NAME.match(self.name or ""):
            raise HoodieError(f"table name {self.name!r} is invalid: use letters, digits and underscores")
        if not _NAME.match(self.database or ""):
            raise HoodieError(f"database name {self.database!r} is invalid: use letters, digits and underscores")
        if not self.record_key_fields:
            raise HoodieError(f"table {self.name!r}: record_key_fields must name at least one field")
        if self.keygen_class is None:
            object.__setattr__(self, "keygen_class", self._default_keygen())
        if self.keygen_class not in SUPPORTED_KEYGENS:
            raise UnsupportedTableError(
                f"table {self.name!r}: hoodie.table.keygenerator.class={self.keygen_class} is not supported "
                f"(supported: {', '.join(SUPPORTED_KEYGENS)})"
            )

    def _default_keygen(self) -> str:
        if not self.partition_fields:
            return NONPARTITIONED_KEYGEN
        if len(self.record_key_fields) == 1 and len(self.partition_fields) == 1:
            return SIMPLE_KEYGEN
        return COMPLEX_KEYGEN

    @property
    def complex_keys(self) -> bool:
        """Whether record keys take the ``field:value,...`` form (Hudi: more than one key field)."""
        return len(self.record_key_fields) > 1 or self.keygen_class == COMPLEX_KEYGEN

    def to_properties(self) -> dict[str, str]:
        props = {
            "hoodie.table.type": "COPY_ON_WRITE",
            "hoodie.table.version": TABLE_VERSION,
            "hoodie.timeline.layout.version": TIMELINE_LAYOUT_VERSION,
            "hoodie.archivelog.folder": "archived",
            "hoodie.database.name": self.database,
            "hoodie.table.name": self.name,
            "hoodie.table.recordkey.fields": ",".join(self.record_key_fields),
        }
        if self.precombine_field:
            props["hoodie.table.precombine.field"] = self.precombine_field
        if self.partition_fields:
            props["hoodie.table.partition.fields"] = ",".join(self.partition_fields)
        props.update(
            {
                "hoodie.table.keygenerator.class": str(self.keygen_class),
                "hoodie.datasource.write.hive_style_partitioning": str(self.hive_style).lower(),
                "hoodie.datasource.write.partitionpath.urlencode": str(self.url_encode).lower(),
                "hoodie.datasource.write.drop.partition.columns": "false",
                "hoodie.table.base.file.format": "PARQUET",
                "hoodie.populate.meta.fields": "true",
                "hoodie.table.timeline.timezone": "UTC",
            }
        )
        props.update(self.extra_properties)
        props["hoodie.table.checksum"] = table_checksum(self.database, self.name)
        return props

    @classmethod
    def from_properties(cls, props: dict[str, str], where: str) -> TableConfig:
        """Read and vet a table's properties; refuse what this writer must not touch, naming the property."""
        checks = [
            ("hoodie.table.version", props.get("hoodie.table.version"), TABLE_VERSION),
            ("hoodie.table.type", props.get("hoodie.table.type", "COPY_ON_WRITE"), "COPY_ON_WRITE"),
            ("hoodie.timeline.layout.version", props.get("hoodie.timeline.layout.version", "1"), "1"),
            ("hoodie.table.base.file.format", props.get("hoodie.table.base.file.format", "PARQUET"), "PARQUET"),
            ("hoodie.populate.meta.fields", props.get("hoodie.populate.meta.fields", "true"), "true"),
        ]
        for key, actual, expected in checks:
            if (actual or "").upper() != expected.upper():
                raise UnsupportedTableError(
                    f"{where}: {key}={actual} is not supported; this writer handles {key}={expected} only"
                )
        metadata_partitions = props.get("hoodie.table.metadata.partitions", "").strip()
        if metadata_partitions:
            raise UnsupportedTableError(
                f"{where}: hoodie.table.metadata.partitions={metadata_partitions} (a metadata table is enabled); "
                "this writer would leave it stale. Disable it with hoodie.metadata.enable=false on the Java side "
                "and delete .hoodie/metadata first"
            )
        name = props.get("hoodie.table.name")
        if not name:
            raise HoodieError(f"{where}: hoodie.table.name is missing")
        key_fields = tuple(f for f in props.get("hoodie.table.recordkey.fields", "").split(",") if f)
        if not key_fields:
            raise UnsupportedTableError(f"{where}: hoodie.table.recordkey.fields is missing")
        known = {
            "hoodie.table.name", "hoodie.database.name", "hoodie.table.recordkey.fields",
            "hoodie.table.precombine.field", "hoodie.table.partition.fields", "hoodie.table.keygenerator.class",
            "hoodie.datasource.write.hive_style_partitioning", "hoodie.datasource.write.partitionpath.urlencode",
            "hoodie.table.checksum",
        }
        return cls(
            name=name,
            database=props.get("hoodie.database.name") or "default",
            record_key_fields=key_fields,
            precombine_field=props.get("hoodie.table.precombine.field") or None,
            partition_fields=tuple(f for f in props.get("hoodie.table.partition.fields", "").split(",") if f),
            hive_style=props.get("hoodie.datasource.write.hive_style_partitioning", "false").lower() == "true",
            url_encode=props.get("hoodie.datasource.write.partitionpath.urlencode", "false").lower() == "true",
            keygen_class=props.get("hoodie.table.keygenerator.class") or None,
            extra_properties={k: v for k, v in props.items() if k not in known and k not in cls._managed()},
        )

    @staticmethod
    def _managed() -> set[str]:
        return {
            "hoodie.table.type", "hoodie.table.version", "hoodie.timeline.layout.version",
            "hoodie.archivelog.folder", "hoodie.datasource.write.drop.partition.columns",
            "hoodie.table.base.file.format", "hoodie.populate.meta.fields", "hoodie.table.timeline.timezone",
        }

    def same_layout(self, other: TableConfig) -> bool:
        """Whether two configs write the same keys and paths (what create_or_open must agree on)."""
        return (
            self.name == other.name
            and self.record_key_fields == other.record_key_fields
            and self.partition_fields == other.partition_fields
            and (self.precombine_field or None) == (other.precombine_field or None)
            and self.hive_style == other.hive_style
            and self.url_encode == other.url_encode
        )
