"""A one-class jar that keeps the pyspark wheel's Thrift server from poisoning itself.

The wheel ships ``hive-exec-2.3.10-core.jar`` without Hive's LLAP module. Hive's
``FunctionRegistry`` static initializer registers ``GenericUDTFGetSplits``, whose
constructor signature needs ``org.apache.hadoop.hive.llap.security.LlapSigner$Signable``.
When a Thrift session closes on a thread without a cached Hive client,
``SessionState.close`` → ``Hive.get`` → ``registerAllFunctionsOnce`` runs that initializer,
which dies with ``NoClassDefFoundError``. Being an ``Error`` (not an ``Exception``) it
escapes Hive's handler, the "functions registered" flag stays *pending*, and every later
session close on that server waits forever.

Loading that one interface is all the initializer needs (checked here: with it,
``Class.forName("...FunctionRegistry")`` succeeds on the wheel's classpath; the LLAP
``get_splits`` function itself stays unusable, as it always was). There is no Maven
repository and no JDK compiler on a JRE-only machine, so the class file is written by
the few lines below: an empty public interface extending nothing, Java 8 class format.
"""

from __future__ import annotations

import struct
import zipfile
from pathlib import Path

MISSING_INTERFACE = "org/apache/hadoop/hive/llap/security/LlapSigner$Signable"
JAR_NAME = "hive-llap-signable-stub.jar"

_ACC_PUBLIC_INTERFACE_ABSTRACT = 0x0001 | 0x0200 | 0x0400
_JAVA_8_MAJOR = 52


def _utf8(text: str) -> bytes:
    data = text.encode("utf-8")
    return struct.pack(">BH", 1, len(data)) + data


def _class_ref(name_index: int) -> bytes:
    return struct.pack(">BH", 7, name_index)


def empty_interface_class(internal_name: str) -> bytes:
    """The bytes of a ``.class`` file declaring an empty public interface ``internal_name``."""
    constant_pool = _utf8(internal_name) + _class_ref(1) + _utf8("java/lang/Object") + _class_ref(3)
    return b"".join(
        [
            struct.pack(">IHH", 0xCAFEBABE, 0, _JAVA_8_MAJOR),
            struct.pack(">H", 5),  # constant pool count = entries + 1
            constant_pool,
            struct.pack(">HHH", _ACC_PUBLIC_INTERFACE_ABSTRACT, 2, 4),  # flags, this, super
            struct.pack(">HHHH", 0, 0, 0, 0),  # interfaces, fields, methods, attributes
        ]
    )


def ensure_stub_jar(directory: Path) -> Path:
    """Write the stub jar into ``directory`` (idempotent) and return its path."""
    directory.mkdir(parents=True, exist_ok=True)
    jar = directory / JAR_NAME
    entry = f"{MISSING_INTERFACE}.class"
    payload = empty_interface_class(MISSING_INTERFACE)
    if jar.exists():
        try:
            with zipfile.ZipFile(jar) as existing:
                if existing.read(entry) == payload:
                    return jar
        except (zipfile.BadZipFile, KeyError):
            pass
    partial = jar.with_suffix(".tmp")
    with zipfile.ZipFile(partial, "w") as archive:
        archive.writestr("META-INF/MANIFEST.MF", "Manifest-Version: 1.0\r\n\r\n")
        archive.writestr(entry, payload)
    partial.replace(jar)
    return jar
