#!/bin/sh
# Thread migrations and context switches of the workers of one yardstick session
# (req/findings.md §18): samples /proc/<pid>/task/<tid>/sched of every worker thread every
# 0.2 s while the session runs and prints, per thread name, the last values seen (summed over
# the session's worker processes).
# usage: tools/placement/threads.sh CPUS   (e.g. `all` or `0`; from the checkout root)
cpus=$1
./target/release/decode-baseline run --job jobs/yardstick.json --cpus "$cpus" >/dev/null 2>&1 &
launcher=$!
tmp=$(mktemp -d)
while kill -0 $launcher 2>/dev/null; do
    for pid in $(pgrep -P $launcher); do
        for task in /proc/$pid/task/*; do
            [ -r "$task/sched" ] || continue
            name=$(cat "$task/comm" 2>/dev/null)
            awk -v key="$pid/$(basename $task)/$name" '/se.nr_migrations|^nr_switches|nr_voluntary_switches|nr_involuntary_switches/ {v[$1]=$3} END {print key, v["se.nr_migrations"], v["nr_switches"], v["nr_voluntary_switches"], v["nr_involuntary_switches"]}' "$task/sched" 2>/dev/null > "$tmp/$pid.$(basename $task)"
        done
    done
    sleep 0.2
done
echo "--cpus $cpus: busiest worker threads (pid/tid/name, migrations, switches, voluntary, involuntary):"; cat "$tmp"/* | sort -k3 -nr | head -6 | sed "s/^/  /"
echo "--cpus $cpus: per worker thread name: threads, migrations, switches, voluntary, involuntary (summed)"
cat "$tmp"/* | awk '{split($1, k, "/"); n=k[3]; t[n]++; m[n]+=$2; s[n]+=$3; v[n]+=$4; i[n]+=$5} END {for (n in t) printf "  %-16s %3d %8d %8d %8d %8d\n", n, t[n], m[n], s[n], v[n], i[n]}' | sort -k3 -nr
rm -r "$tmp"
