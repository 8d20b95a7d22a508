#!/usr/bin/env bash
# Continuous profiling of a server under load: redis-server driven by redis-benchmark (SET and
# GET, 50 clients, on loopback), run plainly and under `stallscope run --push URL --every E`
# (EVERY, default 10s),
# interleaved, ROUNDS rounds; prints each run's requests per second and the medians. The server
# the windows go to is a small HTTP sink on loopback (benches/push_sink.py: it reads each request
# and answers 200), or Parca where PUSH_URL names one. Then the memory: one redis under load
# profiled in windows of 1 s, the resident memory of redis (the interposer lives in it) and of
# the stallscope process (it reads and pushes the windows) after 10 windows and after WINDOWS,
# beside plain redis's under the same load for the same time.
# A benchmark, not a test: it asserts nothing.
#
# Usage: benches/push_redis.sh [ROUNDS] [REQUESTS] [WINDOWS]   (the stallscope of target/release;
# ROUNDS 0: the memory only)
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-5}
requests=${2:-200000}
windows=${3:-120}
every=${EVERY:-10s}
S=$PWD/target/release/stallscope
work=$(mktemp -d)
sink_pid=
cleanup() {
    [ -n "$sink_pid" ] && kill "$sink_pid" 2>/dev/null
    rm -rf "$work"
}
trap cleanup EXIT

free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

url=${PUSH_URL:-}
if [ -z "$url" ]; then
    sink_port=$(free_port)
    python3 benches/push_sink.py "$sink_port" &
    sink_pid=$!
    url="http://127.0.0.1:$sink_port/api/profiles/writeraw"
    sleep 0.5
fi

# start MODE PORT: starts redis (plain or pushed) on PORT, in the background; prints its pid.
start() {
    local args=(redis-server --port "$2" --save "" --appendonly no --daemonize no --logfile "$work/redis.log")
    case $1 in
        plain) "${args[@]}" >/dev/null 2>&1 & ;;
        push) "$S" run -q --push "$url" --every "$3" -- "${args[@]}" >/dev/null 2>"$work/push.err" & ;;
    esac
    echo $!
    until redis-cli -p "$2" ping >/dev/null 2>&1; do sleep 0.05; done
}

stop() {
    redis-cli -p "$1" shutdown nosave >/dev/null 2>&1 || true
    wait "$2" 2>/dev/null || true
}

one() {
    local port
    port=$(free_port)
    local pid
    pid=$(start "$1" "$port" "$every")
    local rps
    rps=$(redis-benchmark -p "$port" -q -c 50 -n "$requests" -t set,get --csv |
        awk -F, 'NR > 1 { gsub(/"/, "", $2); s += $2; n++ } END { printf "%.0f", s / n }')
    stop "$port" "$pid"
    echo "$rps"
}

declare -A all
for r in $(seq "$rounds"); do
    for m in plain push; do
        v=$(one $m)
        all[$m]="${all[$m]:-} $v"
        echo "round $r $m: $v requests/s"
    done
done
if [ "$rounds" -gt 0 ]; then
    source benches/common.sh
    p=$(echo "${all[plain]}" | bench_median)
    q=$(echo "${all[push]}" | bench_median)
    echo "median: plain $p, pushed every $every $q requests/s (ratio $(python3 -c "print(f'{$q / $p:.3f}')"))"
fi

# Memory after many windows, under load all along: redis pushed in windows of 1 s, and plain
# redis under the same load for the same time (what redis itself grows by).
rss() { awk '/^VmRSS/ { print $2 }' "/proc/$1/status"; }
for m in push plain; do
    port=$(free_port)
    pid=$(start $m "$port" 1s)
    redis_pid=$pid
    [ $m = push ] && redis_pid=$(pgrep -P "$pid" redis-server | head -1)
    redis-benchmark -p "$port" -q -c 20 -n 100000000 -t set,get -l >/dev/null 2>&1 &
    load=$!
    sleep 10
    a="redis $(rss "$redis_pid") kB"
    [ $m = push ] && a="$a, stallscope $(rss "$pid") kB"
    sleep $((windows - 10))
    b="redis $(rss "$redis_pid") kB"
    [ $m = push ] && b="$b, stallscope $(rss "$pid") kB"
    echo "$m: after 10 s: $a; after $windows s: $b"
    kill "$load" 2>/dev/null || true
    wait "$load" 2>/dev/null || true
    stop "$port" "$pid"
done
cat "$work/push.err"
