#!/usr/bin/env bash
# The same from a shell: one long-running `hpcopt serve --stdio` as a bash coprocess.
# Each request is one line of JSON; each reply is one line.
#   bash examples/decide_client.sh
set -euo pipefail
coproc SERVER { "${HPCOPT:-hpcopt}" serve --stdio; }
ask() {  # no pipelines around it: bash keeps coprocess descriptors out of subshells
    printf '%s\n' "$1" >&"${SERVER[1]}"
    IFS= read -r REPLY <&"${SERVER[0]}"
}
ask '{"id": 1, "op": "hello"}'
echo "${REPLY:0:60}..."
ask '{"id": 2, "op": "decide", "policy": "fcfs", "window": {"time": 10, "system": {"nodes": 10}, "queue": [{"id": "a", "submit": 0, "walltime": 100, "nodes": 6}, {"id": "b", "submit": 5, "walltime": 50, "nodes": 2}], "running": [{"id": "r1", "nodes": 6, "expected_end": 300}]}}'
echo "$REPLY"
eval "exec ${SERVER[1]}>&-"  # EOF: the server exits 0
wait
