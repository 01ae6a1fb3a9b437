#!/usr/bin/env bash
# JupyterLab on the remote box: a detached ferry run (it survives a dropped link) plus a local
# tunnel, with a token ferry makes here and hands over in the environment, never on a command
# line that `ps` on the box would show. Run it from inside a ferry project (or set FERRY_PROJECT).
set -euo pipefail

port=${PORT:-8888}
ferry=${FERRY:-ferry}
project_args=()
[[ -n ${FERRY_PROJECT:-} ]] && project_args=(--project "$FERRY_PROJECT")
token=${JUPYTER_TOKEN:-$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')}

# jupyter-server reads JUPYTER_TOKEN; `-m jupyter` uses ferry.json's interpreter, so the lab
# runs in the same environment as your scripts (a bare `jupyter` would be looked up on PATH).
run_id=$("$ferry" "${project_args[@]}" run --detach --env "JUPYTER_TOKEN=$token" -- \
  -m jupyter lab --no-browser --ip 127.0.0.1 --port "$port")

cat >&2 <<MSG
JupyterLab started as run $run_id (see it with: $ferry runs; its log: $ferry logs $run_id)
Open: http://127.0.0.1:$port/lab?token=$token
Stop the tunnel with Ctrl-C; stop the lab with: $ferry kill $run_id
MSG
exec "$ferry" "${project_args[@]}" tunnel "$port"
