"""The pinned JVM dependencies: one classpath per JVM role, resolved from Maven Central at set-up.

Each role has a Maven project ``jvm/<role>/pom.xml`` (the pinned list) that ``scripts/setup.sh``
resolves into ``jvm/lib/<role>/`` (``mvn dependency:copy-dependencies``, checksums checked).
Nothing is fetched at run time: a process that needs a role's jars asks ``classpath(role)``,
which fails with a clear error naming the missing or broken artifact and the fix.
Roles do not share a directory because they bring other Scala/Kafka/Jackson versions.

``LAKEHOUSE_JVM_LIB`` points at another directory of resolved roles (a cluster image, say).
"""

from __future__ import annotations

import os
import sys
import xml.etree.ElementTree as ET
import zipfile
from dataclasses import dataclass
from pathlib import Path

from ingestion.errors import IngestionError

#: The project's jvm/ directory (pom.xml per role) and where set-up resolves the jars.
JVM_DIR = Path(__file__).resolve().parent.parent / "jvm"
_POM_NS = {"m": "http://maven.apache.org/POM/4.0.0"}


class JvmDependencyError(IngestionError, RuntimeError):
    """A role's jars are missing or broken; the message names the artifact and the fix."""

    def __init__(self, message: str, hint: str = "run 'make setup' (it resolves jvm/<role>/pom.xml from Maven Central)",
                 ) -> None:
        super().__init__(message)
        self.hint = hint


@dataclass(frozen=True)
class Artifact:
    group_id: str
    artifact_id: str
    version: str
    classifier: str = ""
    kind: str = "jar"  # the Maven <type>: jar, or an archive such as tar.gz

    @property
    def jar_name(self) -> str:
        """The file name ``dependency:copy-dependencies`` gives it."""
        classifier = f"-{self.classifier}" if self.classifier else ""
        return f"{self.artifact_id}-{self.version}{classifier}.{self.kind}"

    def __str__(self) -> str:
        return f"{self.group_id}:{self.artifact_id}:{self.version}"


def lib_dir(role: str) -> Path:
    root = os.environ.get("LAKEHOUSE_JVM_LIB")
    return (Path(root) if root else JVM_DIR / "lib") / role


def declared_artifacts(role: str) -> list[Artifact]:
    """The artifacts ``jvm/<role>/pom.xml`` declares (its direct dependencies, properties expanded)."""
    pom = JVM_DIR / role / "pom.xml"
    root = ET.parse(pom).getroot()
    properties = {child.tag.split("}", 1)[1]: (child.text or "").strip()
                  for child in root.findall("m:properties/*", _POM_NS)}

    def expand(text: str | None) -> str:
        value = (text or "").strip()
        for name, replacement in properties.items():
            value = value.replace("${" + name + "}", replacement)
        return value

    return [
        Artifact(expand(dep.findtext("m:groupId", namespaces=_POM_NS)),
                 expand(dep.findtext("m:artifactId", namespaces=_POM_NS)),
                 expand(dep.findtext("m:version", namespaces=_POM_NS)),
                 expand(dep.findtext("m:classifier", namespaces=_POM_NS)),
                 expand(dep.findtext("m:type", namespaces=_POM_NS)) or "jar")
        for dep in root.findall("m:dependencies/m:dependency", _POM_NS)
    ]


def check(role: str, *, deep: bool = False) -> list[Path]:
    """The jars of ``role``; raises JvmDependencyError when a declared artifact is missing or broken.

    ``deep`` also opens every jar as a zip archive (set-up does; a run only checks presence).
    """
    directory = lib_dir(role)
    for artifact in declared_artifacts(role):
        jar = directory / artifact.jar_name
        if not jar.is_file():
            raise JvmDependencyError(f"{artifact} is missing: no {jar}")
    jars = sorted(directory.glob("*.jar"))
    if deep:
        for jar in jars:
            if not zipfile.is_zipfile(jar):
                raise JvmDependencyError(f"{jar.name} is not a readable jar (truncated or corrupt download)",
                                         hint=f"delete {jar} and run 'make setup' again")
    return jars


def classpath(role: str) -> str:
    """The ``:``-joined classpath of ``role`` (checked for presence)."""
    return os.pathsep.join(str(jar) for jar in check(role))


def main(argv: list[str] | None = None) -> int:
    """``python -m ingestion.jvm check ROLE...``: set-up's verification of the resolved jars;
    ``python -m ingestion.jvm classpath ROLE``: the role's class path (``:``-joined)."""
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) == 2 and args[0] == "classpath":  # for spark-submit --driver-class-path (docs/cluster.md)
        try:
            print(classpath(args[1]))
        except JvmDependencyError as exc:
            print(f"error: JVM role {args[1]}: {exc}\nhint: {exc.hint}", file=sys.stderr)
            return 1
        return 0
    if len(args) < 2 or args[0] != "check":
        print("usage: python -m ingestion.jvm check ROLE... | classpath ROLE", file=sys.stderr)
        return 2
    for role in args[1:]:
        try:
            jars = check(role, deep=True)
        except JvmDependencyError as exc:
            print(f"error: JVM role {role}: {exc}\nhint: {exc.hint}", file=sys.stderr)
            return 1
        size = sum(jar.stat().st_size for jar in jars) / 1e6
        print(f"JVM role {role}: {len(jars)} jars, {size:.0f} MB in {lib_dir(role)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
