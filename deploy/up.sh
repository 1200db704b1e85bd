#!/usr/bin/env bash
# Brings up keygate on loopback: its own redis-server, a database of its own on the local
# PostgreSQL, N instances and HAProxy in front, each on a free port. Stops all of them by
# pid on exit or Ctrl-C. Usage: deploy/up.sh [instances=2]
# Env: PGURL (default postgres://postgres@127.0.0.1:5432), DB (default keygate_deploy),
#      ADMIN_TOKEN (default generated).
set -euo pipefail
cd "$(dirname "$0")/.."
instances=${1:-2}
pg=${PGURL:-postgres://postgres@127.0.0.1:5432}
db=${DB:-keygate_deploy}
export ADMIN_TOKEN=${ADMIN_TOKEN:-$(head -c 24 /dev/urandom | base64 | tr -d '/+=')}
bun=./node_modules/.bin/bun
work=$(mktemp -d)
pids=()

stop() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap stop EXIT
trap 'exit 130' INT TERM

free_port() {
  "$bun" -e 'const s = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data() {} } }); console.log(s.port); s.stop(true)'
}

psql "$pg/postgres" -qtc "select 1 from pg_database where datname = '$db'" | grep -q 1 ||
  psql "$pg/postgres" -qc "create database $db"

redis_port=$(free_port)
redis-server --bind 127.0.0.1 --port "$redis_port" --save '' --appendonly no --daemonize no \
  >"$work/redis.log" 2>&1 &
pids+=($!)
redis_pid=$!

servers=''
for i in $(seq 1 "$instances"); do
  port=$(free_port)
  mkdir -p "$work/data$i"
  PORT=$port DATA_DIR="$work/data$i" DATABASE_URL="$pg/$db" \
    REDIS_URL="redis://127.0.0.1:$redis_port" TRUST_PROXY=127.0.0.1 \
    "$bun" src/index.ts >"$work/instance$i.log" 2>&1 &
  pids+=($!)
  servers+="  server instance$i 127.0.0.1:$port check"$'\n'
  echo "instance$i  http://127.0.0.1:$port  (pid $!, log $work/instance$i.log)"
done

proxy_port=$(free_port)
sed -e "s|@BIND@|127.0.0.1:$proxy_port|" deploy/haproxy.cfg.template |
  SERVERS="$servers" awk '/^@SERVERS@$/ { printf "%s", ENVIRON["SERVERS"]; next } { print }' >"$work/haproxy.cfg"
haproxy -db -f "$work/haproxy.cfg" >"$work/haproxy.log" 2>&1 &
pids+=($!)
haproxy_pid=$!

# Ready when every instance and the proxy answer /readyz (migrations done, database up).
for url in $(printf '%s\n' "$servers" | awk '{ print "http://" $3 }') "http://127.0.0.1:$proxy_port"; do
  for _ in $(seq 1 300); do
    curl -fs "$url/readyz" >/dev/null && break
    sleep 0.1
  done
done
echo "redis      redis://127.0.0.1:$redis_port"
echo "database   $pg/$db"
echo "proxy      http://127.0.0.1:$proxy_port"
echo "ADMIN_TOKEN=$ADMIN_TOKEN"
echo "Ctrl-C stops everything."
# An instance that stops is HAProxy's to route around (its health check takes it out of the
# rotation); the deployment as a whole stops when HAProxy or Redis does.
wait -n "$haproxy_pid" "$redis_pid"
echo "haproxy or redis exited; stopping" >&2
