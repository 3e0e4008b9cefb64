"""The console's vendored front-end files are the ones the MANIFEST names: each file's SHA-256 as recorded,
every package with its licence beside it, and nothing in the directory the MANIFEST does not list."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

import pytest

import kassa.console

VENDOR = Path(kassa.console.__file__).parent / "static" / "vendor"
LICENCES = {"0BSD", "MIT", "ISC", "BSD-2-Clause", "BSD-3-Clause", "Apache-2.0"}  # permissive, as the project's own


@dataclass(frozen=True)
class Entry:
    file: str
    package: str
    version: str
    licence: str
    licence_file: str
    tarball: str
    sha256: str


def manifest() -> list[Entry]:
    entries = []
    for line in (VENDOR / "MANIFEST").read_text().splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        file, package, version, licence, tarball, sha256 = line.split("\t")
        spdx, licence_file = licence.split(" ")
        entries.append(Entry(file, package, version, spdx, licence_file, tarball, sha256))
    return entries


@pytest.mark.parametrize("entry", manifest(), ids=lambda e: e.file)
def test_each_vendored_file_has_the_sha256_the_manifest_records(entry: Entry) -> None:
    assert hashlib.sha256((VENDOR / entry.file).read_bytes()).hexdigest() == entry.sha256


@pytest.mark.parametrize("entry", manifest(), ids=lambda e: e.file)
def test_each_vendored_file_names_its_npm_tarball_at_a_pinned_version(entry: Entry) -> None:
    name = entry.package.rsplit("/", 1)[-1]
    assert entry.tarball == f"https://registry.npmjs.org/{entry.package}/-/{name}-{entry.version}.tgz"


def test_every_vendored_package_names_a_licence_whose_text_is_vendored_with_it() -> None:
    by_package: dict[str, set[tuple[str, str]]] = {}
    for entry in manifest():
        by_package.setdefault(entry.package, set()).add((entry.licence, entry.licence_file))
    assert set(by_package) == {"htmx.org", "uplot"}
    for package, licences in by_package.items():
        assert len(licences) == 1, f"{package} names more than one licence"
        ((spdx, licence_file),) = licences
        assert spdx in LICENCES
        assert (VENDOR / licence_file).read_text().strip(), f"{licence_file} is empty"
        assert licence_file in {e.file for e in manifest()}


def test_the_vendor_directory_holds_only_what_the_manifest_lists() -> None:
    present = {p.name for p in VENDOR.iterdir()} - {"MANIFEST"}
    assert present == {e.file for e in manifest()}


def test_the_package_data_ships_the_vendored_files() -> None:
    pyproject = (Path(kassa.console.__file__).parents[2] / "pyproject.toml").read_text()
    assert '"console/static/vendor/*"' in pyproject
