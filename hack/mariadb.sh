#!/usr/bin/env bash
# Makes sure a MariaDB server answers on 127.0.0.1:3306 for root with an
# empty password: installs mariadb-server when missing, starts it when
# stopped. Tests create (and drop) their own databases on it.
set -euo pipefail

addr_ok() { mariadb --protocol=tcp -h127.0.0.1 -P3306 -uroot -e 'SELECT 1' >/dev/null 2>&1; }

# The end-to-end tests run many planes at once on this server, each with
# up to 20 idle kine connections and a hold session: Debian's default of
# 151 connections ran out under `go test -parallel 4` ("Error 1040: Too
# many connections"), failing whichever plane or data tool asked next.
# Raised for the running server (not persisted: a restart goes back).
min_connections=1000
ensure_connections() {
  local n
  n=$(mariadb --protocol=tcp -h127.0.0.1 -P3306 -uroot -N -e 'SELECT @@GLOBAL.max_connections' 2>/dev/null || echo 0)
  if [ "${n:-0}" -lt "$min_connections" ]; then
    mariadb --protocol=tcp -h127.0.0.1 -P3306 -uroot -e "SET GLOBAL max_connections = $min_connections" &&
      echo "mariadb: max_connections $n -> $min_connections"
  fi
}

if addr_ok; then
  ensure_connections
  echo "mariadb: running on 127.0.0.1:3306"
  exit 0
fi

if ! command -v mariadbd >/dev/null 2>&1 && [ ! -x /usr/sbin/mariadbd ]; then
  echo "mariadb: installing mariadb-server"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq mariadb-server mariadb-client >/dev/null
fi

echo "mariadb: starting"
mkdir -p /run/mysqld
chown mysql:mysql /run/mysqld 2>/dev/null || true
if [ ! -d /var/lib/mysql/mysql ]; then
  mariadb-install-db --user=mysql --datadir=/var/lib/mysql >/dev/null
fi
# The shared server is the mariadbd of this pid file: tests also run
# private mariadbd processes (other ports and data directories), which must
# neither count as this one running nor be stopped here.
pidfile=/run/mysqld/mysqld.pid
start() {
  start-stop-daemon --start --oknodo --background --pidfile "$pidfile" \
    --exec /usr/sbin/mariadbd -- --user=mysql --pid-file="$pidfile"
}
start

for i in $(seq 1 300); do
  if addr_ok; then ensure_connections; echo "mariadb: running on 127.0.0.1:3306"; exit 0; fi
  # A fresh install may only allow root over the unix socket.
  mariadb -uroot -e "ALTER USER 'root'@'localhost' IDENTIFIED VIA unix_socket OR mysql_native_password USING PASSWORD(''); FLUSH PRIVILEGES;" >/dev/null 2>&1 || true
  # A server that crashed can linger without answering (MariaDB 10.11
  # writing its crash report): after 20 s, kill it and start a new one,
  # which recovers the data on start.
  if [ "$i" -eq 100 ]; then
    echo "mariadb: the server of $pidfile does not answer after 20 s; killing it and starting again"
    start-stop-daemon --stop --oknodo --pidfile "$pidfile" --exec /usr/sbin/mariadbd --retry KILL/10 || true
    start
  fi
  sleep 0.2
done
echo "mariadb: did not come up on 127.0.0.1:3306" >&2
exit 1
