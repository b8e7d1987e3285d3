#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# Runs a command beside a throwaway PostgreSQL server, for the shared-tier tests and benchmarks:
#
#   scripts/with-postgres.sh swift test --skip-build
#
# initdb into a temporary directory (as the postgres user when run as root: initdb refuses root),
# pg_ctl start on a free loopback port with the Unix socket in that directory, then the command
# with LAYEREDCACHE_POSTGRES_URL set, and LAYEREDCACHE_POSTGRES_CONTROL naming a script that
# stops (`stop`, pg_ctl -m immediate) and starts (`start`) the same server for the fault tests.
# The server is stopped by its pid, and the directory removed, when the command ends, also when
# it fails or is interrupted. The command's exit status is the script's.
#
# Without server binaries (Debian's postgresql package; `make deps` installs it) or when the
# server cannot start, the command runs without the URL and the shared-tier tests skip with one
# line; with CI=true that is an error instead.
set -euo pipefail

# fail_or_skip MESSAGE COMMAND...: an error in CI, else run COMMAND without the server.
fail_or_skip() {
    local message="$1"
    shift
    if [ "${CI:-}" = "true" ]; then
        echo "error: $message (CI needs a PostgreSQL server for the shared-tier tests; run make deps)" >&2
        exit 1
    fi
    echo "note: $message; running without PostgreSQL (the shared-tier tests and benchmarks are skipped)" >&2
    exec "$@"
}

bindir=""
if command -v initdb >/dev/null 2>&1; then
    bindir="$(dirname "$(command -v initdb)")"
else
    for candidate in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V -r); do
        if [ -x "$candidate/initdb" ] && [ -x "$candidate/pg_ctl" ]; then bindir="$candidate"; break; fi
    done
fi
if [ -z "$bindir" ]; then
    fail_or_skip "PostgreSQL server binaries (initdb, pg_ctl) not found" "$@"
fi

workdir="$(mktemp -d "${TMPDIR:-/tmp}/layeredcache-pg.XXXXXX")"
runas=()
if [ "$(id -u)" -eq 0 ]; then
    if ! id postgres >/dev/null 2>&1; then
        rm -rf "$workdir"
        fail_or_skip "running as root and there is no postgres user to run the server as" "$@"
    fi
    chown postgres: "$workdir"
    if command -v runuser >/dev/null 2>&1; then runas=(runuser -u postgres --); else runas=(su postgres -s /bin/sh -c); fi
fi

stop_server() {
    local status=$?
    if [ -f "$workdir/data/postmaster.pid" ]; then
        local pid
        pid="$(head -n 1 "$workdir/data/postmaster.pid" 2>/dev/null || true)"
        if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
            kill -INT "$pid" 2>/dev/null || true  # fast shutdown
            for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
            kill -KILL "$pid" 2>/dev/null || true
        fi
    fi
    rm -rf "$workdir"
    exit "$status"
}
child=""
trap stop_server EXIT
# On INT or TERM, pass it on to the command and stop the server without waiting for it to exit.
trap '[ -n "$child" ] && kill -TERM "$child" 2>/dev/null; exit 130' INT
trap '[ -n "$child" ] && kill -TERM "$child" 2>/dev/null; exit 143' TERM

# A free loopback port: the kernel's pick for a socket that is closed at once.
port="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()' 2>/dev/null || echo $((20000 + RANDOM % 20000)))"

run_pg() {
    if [ ${#runas[@]} -eq 0 ]; then "$@"; elif [ "${runas[0]}" = "su" ]; then "${runas[@]}" "$(printf '%q ' "$@")"; else "${runas[@]}" "$@"; fi
}

if ! run_pg "$bindir/initdb" -D "$workdir/data" -A trust -U postgres -E UTF8 --no-sync >"$workdir/initdb.log" 2>&1; then
    cat "$workdir/initdb.log" >&2
    trap - EXIT; rm -rf "$workdir"
    fail_or_skip "initdb failed" "$@"
fi
options="-p $port -k $workdir -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=200"
cat >"$workdir/control" <<CONTROL
#!/bin/sh
# stop: pg_ctl stop -m immediate (a crash); start: start the same server again.
case "\$1" in
    stop) exec ${runas[*]} "$bindir/pg_ctl" -D "$workdir/data" -m immediate -w stop ;;
    start) exec ${runas[*]} "$bindir/pg_ctl" -D "$workdir/data" -l "$workdir/server.log" -o "$options" -w start ;;
    *) echo "usage: \$0 stop|start" >&2; exit 2 ;;
esac
CONTROL
chmod 0755 "$workdir/control"
if ! run_pg "$bindir/pg_ctl" -D "$workdir/data" -l "$workdir/server.log" -o "$options" -w -t 30 start >/dev/null; then
    cat "$workdir/server.log" >&2 || true
    trap - EXIT; rm -rf "$workdir"
    fail_or_skip "the PostgreSQL server did not start" "$@"
fi
echo "==> PostgreSQL $("$bindir/postgres" --version | awk '{print $3}') on 127.0.0.1:$port (pid $(head -n 1 "$workdir/data/postmaster.pid"))" >&2

export LAYEREDCACHE_POSTGRES_URL="postgres://postgres@127.0.0.1:$port/postgres?sslmode=disable"
export LAYEREDCACHE_POSTGRES_CONTROL="$workdir/control"
set +e
"$@" &
child=$!
wait "$child"
