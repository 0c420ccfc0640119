#!/usr/bin/env bash
# Lists the processes the project's tests, demo or `make run` started
# and left running, with the ports they listen on, and exits 1 if there
# are any (0 when none):
# - a binary of this checkout's bin/ (the plane, the controller, members,
#   agents, the board);
# - an orphaned process (its parent gone) whose command line names a
#   test's temporary directory, /tmp/Test... (private MariaDB and
#   Prometheus servers, Chromium): a test still running has its test
#   binary as parent, so a suite running beside this one is left alone.
# Only processes started within the last SINCE seconds count (all when
# unset). The shared MariaDB on 127.0.0.1:3306 (hack/mariadb.sh) is meant
# to stay and is not listed. It waits up to GRACE seconds (10) for them
# to exit first; with KILL=1 it then stops those still running.
set -uo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
since=${SINCE:-}
grace=${GRACE:-10}

list() {
  ps -eo pid=,ppid=,etimes=,args= | awk -v bin="$repo/bin/" -v since="$since" '
    since != "" && $3 > since { next }
    {
      args = $0; sub(/^ *[0-9]+ +[0-9]+ +[0-9]+ +/, "", args)
      if (index(args, bin) == 1 || ($2 == 1 && args ~ /[= ]\/tmp\/Test[A-Za-z0-9_]/)) print $1 " " args
    }'
}

for ((i = 0; i <= grace; i++)); do
  left=$(list)
  [ -z "$left" ] && exit 0
  [ "$i" -lt "$grace" ] && sleep 1
done
{
  echo "processes left running (the test, demo or run that started them did not stop them):"
  while read -r pid args; do
    ports=$(ss -ltnpH 2>/dev/null | awk -v p="pid=$pid," 'index($0, p) { print $4 }' | paste -sd, -)
    echo "  pid $pid${ports:+ listening on $ports}: ${args:0:200}"
  done <<<"$left"
} >&2
if [ "${KILL:-0}" = 1 ]; then
  while read -r pid _; do kill "$pid" 2>/dev/null; done <<<"$left"
fi
exit 1
