#!/bin/sh
# Speed of `stallscope bench` itself: its cost per run over a bare fork/exec/wait,
# and its medians next to hyperfine's on the same commands.
#
#   benches/runner_speed.sh [RUNS]        (needs cc, python3; hyperfine optional)
#
# Per-run overhead = (elapsed time of the whole `stallscope bench` invocation -
# elapsed time of the bare loop) / runs. It includes stallscope's own start-up,
# spread over the runs, so it is an upper bound.
set -eu
cd "$(dirname "$0")/.."
RUNS=${1:-500}
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$PWD/target-bench}
cargo build --release --quiet
STALLSCOPE=$CARGO_TARGET_DIR/release/stallscope
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
cc -O2 -o "$WORK/bare" benches/runner_speed_bare.c

now_ns() { date +%s%N; }
json_field() { python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print($2)" "$1"; }

for CMD in true "sleep 0.01"; do
    N=$RUNS
    [ "$CMD" = true ] || N=$((RUNS / 5))
    echo "== $CMD ($N runs each)"
    set -- $CMD
    BARE=$("$WORK/bare" "$N" "$@")
    BARE_MEDIAN=${BARE% *}
    BARE_TOTAL=${BARE#* }

    T0=$(now_ns)
    "$STALLSCOPE" bench --runs "$N" --warmup 0 --no-progress \
        --export-json "$WORK/ss.json" "$CMD" >/dev/null
    SS_TOTAL=$(( $(now_ns) - T0 ))
    SS_MEDIAN=$(json_field "$WORK/ss.json" "d['variants'][0]['median_ns']")
    SS_CI=$(json_field "$WORK/ss.json" "'%d-%d' % (d['variants'][0]['ci_low_ns'], d['variants'][0]['ci_high_ns'])")

    printf '  bare fork/exec/wait4:  median %8.3f ms   total %8.1f ms\n' \
        "$(echo "$BARE_MEDIAN / 1000000" | bc -l)" "$(echo "$BARE_TOTAL / 1000000" | bc -l)"
    printf '  stallscope bench:      median %8.3f ms   total %8.1f ms   (CI %s ns)\n' \
        "$(echo "$SS_MEDIAN / 1000000" | bc -l)" "$(echo "$SS_TOTAL / 1000000" | bc -l)" "$SS_CI"
    printf '  stallscope cost per run over bare: %.3f ms\n' \
        "$(echo "($SS_TOTAL - $BARE_TOTAL) / $N / 1000000" | bc -l)"

    if command -v hyperfine >/dev/null; then
        T0=$(now_ns)
        hyperfine -N --runs "$N" --warmup 0 --style none \
            --export-json "$WORK/hf.json" "$CMD" >/dev/null 2>&1
        HF_TOTAL=$(( $(now_ns) - T0 ))
        HF_MEDIAN=$(json_field "$WORK/hf.json" "round(d['results'][0]['median'] * 1e9)")
        printf '  hyperfine -N:          median %8.3f ms   total %8.1f ms\n' \
            "$(echo "$HF_MEDIAN / 1000000" | bc -l)" "$(echo "$HF_TOTAL / 1000000" | bc -l)"
        printf '  hyperfine cost per run over bare:  %.3f ms\n' \
            "$(echo "($HF_TOTAL - $BARE_TOTAL) / $N / 1000000" | bc -l)"
        printf '  medians: stallscope / hyperfine = %.3f\n' \
            "$(echo "$SS_MEDIAN / $HF_MEDIAN" | bc -l)"
    else
        echo "  hyperfine not installed (apt-get install hyperfine): skipped"
    fi
done
