#!/usr/bin/env bash
# stallscope on the glibc versions users run: not part of CI (it downloads and
# runs several C libraries). For each glibc under $GLIBC_ROOT/<version>/ (the distributions' own
# packages, extracted: Ubuntu 22.04's 2.35, 24.04's 2.39, 25.10's 2.42, Debian 13's 2.41, sid's
# 2.43; `--fetch` downloads them), it builds the cause and hostile programs linked to that glibc's
# loader, runs each plainly and under `stallscope run`, compares exit status and output, and
# prints the findings and lock names `report` gives, with that glibc's debug files and without.
# The same programs linked to the system's glibc are run through the other glibc's loader
# (`ld-linux-x86-64.so.2 --library-path DIR ./prog`) as a second way in.
#
#   bash benches/glibc_versions.sh [--fetch] [--versions "2.35 2.39"] [--out DIR]
set -u
cd "$(dirname "$0")/.."
GLIBC_ROOT=${GLIBC_ROOT:-/opt/glibc}
VERSIONS="2.31 2.35 2.39 2.41 2.42 2.43"
OUT=${OUT:-/tmp/glibc_versions}
FETCH=0
while [ $# -gt 0 ]; do
    case "$1" in
        --fetch) FETCH=1 ;;
        --versions) VERSIONS=$2; shift ;;
        --out) OUT=$2; shift ;;
        *) echo "usage: $0 [--fetch] [--versions \"2.35 2.39\"] [--out DIR]" >&2; exit 2 ;;
    esac
    shift
done

# version -> (archive, suite): the distribution that ships it.
source_of() {
    case "$1" in
        2.31) echo "http://archive.ubuntu.com/ubuntu focal-updates" ;;
        2.35) echo "http://archive.ubuntu.com/ubuntu jammy-updates" ;;
        2.39) echo "http://archive.ubuntu.com/ubuntu noble-updates" ;;
        2.41) echo "http://deb.debian.org/debian trixie" ;;
        2.42) echo "http://archive.ubuntu.com/ubuntu questing" ;;
        2.43) echo "http://deb.debian.org/debian sid" ;;
        *) return 1 ;;
    esac
}

fetch() {
    local v=$1 archive suite
    read -r archive suite < <(source_of "$v") || { echo "no source known for glibc $v" >&2; return 1; }
    mkdir -p "$GLIBC_ROOT/$v" "$GLIBC_ROOT/debs"
    local index
    index=$(curl -sf "$archive/dists/$suite/main/binary-amd64/Packages.xz" | xz -d) || {
        echo "cannot read $archive $suite" >&2
        return 1
    }
    for pkg in libc6 libc6-dbg libgcc-s1 libc-bin; do
        local file
        file=$(awk -v p="$pkg" '$1=="Package:"{cur=$2} cur==p && $1=="Filename:"{print $2; exit}' <<<"$index")
        [ -n "$file" ] || { echo "$pkg not in $suite" >&2; continue; }
        curl -sf -o "$GLIBC_ROOT/debs/$(basename "$file")" "$archive/$file" &&
            dpkg-deb -x "$GLIBC_ROOT/debs/$(basename "$file")" "$GLIBC_ROOT/$v"
    done
}

libdir_of() {
    local d
    for d in "$GLIBC_ROOT/$1/usr/lib/x86_64-linux-gnu" "$GLIBC_ROOT/$1/lib/x86_64-linux-gnu"; do
        [ -e "$d/ld-linux-x86-64.so.2" ] && { echo "$d"; return 0; }
    done
    return 1
}

cargo build --release -q || exit 1
SS=$PWD/target/release/stallscope
mkdir -p "$OUT"

# Programs: [name] [args]. Cause programs are C (the system's libstdc++ needs glibc 2.36).
CAUSES=(
    "arena_lock 2 4000000"
    "localtime 2 1000000"
    "named_locks 2 4000000"
    "spinlock 2 3000000"
    "clean_scaling 2 4000"
    "condvar_pipeline 2 5000"
    "fork_arena"
)
HOSTILE=(alloc_apis close_range_start dlopen_loop dup2_high env_emptied fork_exit fork_threads_alloc
    low_fd_limit nofile_runtime signal_alloc_storm sigstate spawn_storm spawn_ways title_rewrite)

# The findings, in one line: id@severity, and the locks' names.
summarize() {
    python3 - "$1" <<'PY'
import json, sys
try:
    r = json.load(open(sys.argv[1]))
except Exception as e:
    print("unreadable report:", e); sys.exit()
r = r[0] if isinstance(r, list) else r
f = [x["id"] + "@" + x["severity"].lower() + " " + x["title"][:90] for x in r.get("findings", []) if x["severity"].lower() in ("high", "medium")]
print(" || ".join(f) or "no medium or high finding")
words = json.dumps(r.get("findings", []))
for internal in ("internal_syscall_cancel", "the lock at 0x", "a thread's arena"):
    if internal in words:
        print("      (a finding says %r)" % internal)
PY
}

for v in $VERSIONS; do
    [ "$FETCH" = 1 ] && fetch "$v"
    lib=$(libdir_of "$v") || { echo "glibc $v: not under $GLIBC_ROOT/$v (run with --fetch)"; continue; }
    ld=$lib/ld-linux-x86-64.so.2
    dir=$OUT/$v
    mkdir -p "$dir"
    # The unwinder beside that libc (libgcc-s1 of the same distribution).
    echo "== glibc $v ($("$ld" --version 2>/dev/null | head -1))"
    if [ "${v#2.}" -lt 34 ]; then
        # Older than the interposer's symbol versions: programs built for it must run unprofiled,
        # as the command and as a child. Its own getent, set to its loader, is the program.
        prog=$dir/getent
        cp "$GLIBC_ROOT/$v/usr/bin/getent" "$prog" && patchelf --set-interpreter "$ld" --set-rpath "$lib" "$prog" || {
            echo "  needs patchelf and libc-bin of $v"
            continue
        }
        printf '#!/bin/sh\n"%s" hosts localhost\necho "child: $?"\n' "$prog" >"$dir/child.sh"
        chmod +x "$dir/child.sh"
        for cmd in "$prog hosts localhost" "$dir/child.sh"; do
            plain=$($cmd 2>&1; echo "status $?")
            rm -f "$dir/old.prof"
            profiled=$("$SS" run -o "$dir/old.prof" -- $cmd 2>"$dir/old.err"; echo "status $?")
            [ "$plain" = "$profiled" ] && same=yes || same="no: $plain / $profiled"
            printf '  %-40s same: %s; note: %s\n' "${cmd##*/}" "$same" "$(grep -o 'unprofiled: its C library is glibc [a-z0-9.]* [0-9.]*' "$dir/old.err" | head -1)"
        done
        continue
    fi
    pass=0 fail=0
    for entry in "${CAUSES[@]}" "${HOSTILE[@]}"; do
        set -- $entry
        name=$1; shift
        src=tests/cause_programs/$name.c
        [ -e "$src" ] || src=tests/hostile_programs/$name.c
        [ -e "$src" ] || src=benches/programs/$name.c
        inc="-Itests/cause_programs"
        gcc -O2 -g -pthread $inc "$src" -o "$dir/$name" -Wl,--dynamic-linker="$ld" -Wl,-rpath="$lib" \
            2>"$dir/$name.build" || { echo "  $name: does not build against $v"; continue; }
        gcc -O2 -g -pthread $inc "$src" -o "$dir/$name.sys" 2>/dev/null
        rm -rf "$dir/$name.prof" "$dir/$name.prof.children" "$dir/$name.ld.prof" "$dir/$name.ld.prof.children"
        # Plain and profiled: same status, same stdout.
        (cd "$dir" && timeout 120 "./$name" "$@" >"$name.plain.out" 2>"$name.plain.err"); plain=$?
        (cd "$dir" && timeout 240 "$SS" run -q -o "$name.prof" -- "./$name" "$@" >"$name.prof.out" 2>"$name.prof.err")
        profiled=$?
        same=yes
        [ "$plain" = "$profiled" ] || same="no (status $plain vs $profiled)"
        # spinlock prints a checksum of racing updates: its output differs from run to run.
        if [ "$same" = yes ] && [ "$name" != spinlock ]; then
            cmp -s "$dir/$name.plain.out" "$dir/$name.prof.out" || same="no (stdout differs)"
        fi
        # Through the loader: the system-linked program run by that glibc's ld.so, plainly and
        # profiled (a program that re-executes /proc/self/exe runs the loader alone either way).
        (cd "$dir" && timeout 120 "$ld" --library-path "$lib" "./$name.sys" "$@" >/dev/null 2>&1); ld_plain=$?
        (cd "$dir" && timeout 240 "$SS" run -q -o "$name.ld.prof" -- "$ld" --library-path "$lib" "./$name.sys" "$@" \
            >/dev/null 2>"$name.ld.err"); via_ld=$?
        "$SS" report --json "$dir/$name.prof" >"$dir/$name.json" 2>"$dir/$name.report.err"
        STALLSCOPE_DEBUG_ROOT=$GLIBC_ROOT/$v/usr/lib/debug "$SS" report --json "$dir/$name.prof" \
            >"$dir/$name.dbg.json" 2>/dev/null
        if [ "$same" = yes ] && [ -s "$dir/$name.json" ]; then pass=$((pass + 1)); else fail=$((fail + 1)); fi
        printf '  %-20s same: %-22s via ld.so: %s\n' "$name" "$same" "$([ $via_ld = $ld_plain ] && echo "same (status $via_ld)" || echo "no (status $ld_plain vs $via_ld)")"
        case " ${CAUSES[*]} " in *" $name "*)
            printf '    no debug file: %s\n' "$(summarize "$dir/$name.json")"
            printf '    debug file:    %s\n' "$(summarize "$dir/$name.dbg.json")"
            ;;
        esac
    done
    # Cross-thread frees read glibc's chunk headers and heap_info (the internals most likely to move).
    gcc -O2 -g -pthread tests/programs/cross_free.c -o "$dir/cross_free" -Wl,--dynamic-linker="$ld" -Wl,-rpath="$lib"
    for mode in handoff own; do
        rm -f "$dir/cross_$mode.prof"
        (cd "$dir" && "$SS" run -q -o "cross_$mode.prof" -- ./cross_free "$mode" >/dev/null 2>&1)
        "$SS" report --json "$dir/cross_$mode.prof" 2>/dev/null | python3 -c '
import json, sys
r = json.load(sys.stdin); r = r[0] if isinstance(r, list) else r
c = r["alloc"].get("cross_thread_frees") or {}
print("  cross-thread frees (%s): %s of %s sampled frees" % (sys.argv[1], c.get("sampled_cross"), c.get("sampled_frees", c.get("sampled"))))
' "$mode"
    done
    echo "  glibc $v: $pass programs the same plainly and profiled, $fail not"
done
