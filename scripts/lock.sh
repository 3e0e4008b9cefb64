#!/usr/bin/env bash
# Re-resolves the locks in requirements/ from pyproject.toml (`make lock`; UPGRADE=1 moves every pin to
# its newest allowed version, otherwise pins that still satisfy pyproject.toml are kept). The locks are
# for CPython 3.11 on Linux x86_64 (glibc 2.28 or later), with a hash for each file pip may install.
#   build.txt    pip and the build backend: installed first, so `pip install -e .` needs nothing unlocked
#   dev.txt      runtime and the dev extra: what `make serve` and `make test` install
#   runtime.txt  the runtime alone, at dev.txt's versions (what the tests ran against), for deployments
set -euo pipefail
cd "$(dirname "$0")/.."

compile=(.venv/bin/uv pip compile --quiet --generate-hashes --python-version 3.11
         --python-platform x86_64-manylinux_2_28 --custom-compile-command "make lock")
if [ -n "${UPGRADE:-}" ]; then compile+=(--upgrade); fi

# pip builds the editable install without isolation from the backend pinned here.
.venv/bin/python -c 'import tomllib; print(*tomllib.load(open("pyproject.toml", "rb"))["build-system"]["requires"], sep="\n")' \
  | { cat; echo pip; } | "${compile[@]}" - -o requirements/build.txt
"${compile[@]}" pyproject.toml --extra dev -o requirements/dev.txt
"${compile[@]}" pyproject.toml -c requirements/dev.txt -o requirements/runtime.txt
