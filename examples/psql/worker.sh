#!/usr/bin/env bash
# A pgq-thin worker in bash + psql: claim, heartbeat, complete, release on SIGTERM, poll.
#
#   examples/psql/worker.sh [ENTRYPOINT ...]     (default: echo fail sleep)
#
# Connection: PGQ_DSN (any libpq connection string) or libpq's PGHOST, PGPORT, PGDATABASE...
# PGQ_WORKER_ID (a uuid; default random), PGQ_BATCH (jobs per claim, default 1),
# PGQ_POLL_S (longest idle wait in seconds, default 5).
# SIGTERM/SIGINT: finish the job in hand, give back the claimed jobs not started, exit 0.
set -uo pipefail

# Demo handlers, chosen by entrypoint: the payload (JSON text) in $1; print the result as JSON
# (or nothing) and return 0, or print a message on stderr and return non-zero to fail.
handle_echo() { printf '%s' "$1"; }
handle_fail() { echo "demo failure: $1" >&2; return 3; }
handle_sleep() {  # {"ms": N}
    local ms=1000
    [[ $1 =~ \"ms\":\ *([0-9]+) ]] && ms=${BASH_REMATCH[1]}
    sleep "$((ms / 1000)).$(printf '%03d' $((ms % 1000)))" && echo '"slept"'
}

WORKER_ID=${PGQ_WORKER_ID:-$(cat /proc/sys/kernel/random/uuid)}
BATCH=${PGQ_BATCH:-1}
POLL_S=${PGQ_POLL_S:-5}
(($#)) && ENTRYPOINTS=("$@") || ENTRYPOINTS=(echo fail sleep)
for ep in "${ENTRYPOINTS[@]}"; do
    declare -F "handle_$ep" >/dev/null || { echo "no handler for $ep" >&2; exit 64; }
done
EPS=$(printf '%s\n' "${ENTRYPOINTS[@]}")  # entrypoint names hold no control characters

# psql: no psqlrc, unaligned tab-separated rows, stop at the first error; values are passed as
# psql variables and quoted by psql (:'name'), never pasted into the SQL text.
q() {
    psql -X -q -A -t -F $'\t' -v ON_ERROR_STOP=1 ${PGQ_DSN:+-d "$PGQ_DSN"} \
        -v worker="$WORKER_ID" -v eps="$EPS" "$@"
}

# ---- the SQL this worker sends (docs/any-language.md) ------------------------------------
sql_claim() {  # -> id, lease, entrypoint, attempt, heartbeat cadence (s), payload
    q -v batch="$BATCH" <<'SQL'
SELECT id, lease, entrypoint, attempt,
       round((min(heartbeat_timeout_s) OVER () / 3)::numeric, 3), payload
  FROM pgq.claim(:'worker', string_to_array(:'eps', E'\n'), :'batch') WITH ORDINALITY
 ORDER BY ordinality;
SQL
}
sql_heartbeat() {  # ids leases (comma-separated) -> id, state
    q -v ids="$1" -v leases="$2" <<'SQL'
SELECT id, state FROM pgq.heartbeat(:'worker', string_to_array(:'ids', ',')::bigint[],
                                    string_to_array(:'leases', ',')::bigint[]);
SQL
}
sql_complete() {  # id lease outcome output error -> what SQL decided; nothing when fenced out
    q -v id="$1" -v lease="$2" -v outcome="$3" -v out="$4" -v err="$5" <<'SQL'
SELECT status FROM pgq.complete(:'worker', ARRAY[:'id'::bigint], ARRAY[:'lease'::bigint],
    ARRAY[:'outcome'], jsonb_build_array(CASE :'outcome'
        WHEN 'successful' THEN jsonb_build_object('result', nullif(:'out', '')::jsonb)
        ELSE jsonb_build_object('error', 'HandlerFailed', 'message', :'err') END));
SQL
}
sql_release() {  # ids leases (comma-separated) -> ids released
    q -v ids="$1" -v leases="$2" <<'SQL'
SELECT id FROM pgq.release(:'worker', string_to_array(:'ids', ',')::bigint[],
                          string_to_array(:'leases', ',')::bigint[]);
SQL
}
sql_idle_seconds() {  # seconds to wait: until the next delayed job, at most POLL_S
    q -v poll="$POLL_S" <<'SQL'
SELECT round(least(coalesce(extract(epoch FROM
    pgq.next_run_at(string_to_array(:'eps', E'\n')) - now())::numeric, :'poll'), :'poll'), 3);
SQL
}
# -------------------------------------------------------------------------------------------

STOP=0
trap 'STOP=1; echo stopping' TERM INT
log() { echo "$1 job=$2 entrypoint=$3 attempt=$4"; }

# Heartbeats the jobs given (comma-separated ids and leases) every $3 seconds in the background,
# while this shell lives; reports what is not "ok" (lost, cancel_requested) on stderr. (The
# sleep holds no output open: it may outlive the loop by one pause.)
beat() {
    while sleep "$3" </dev/null &>/dev/null && kill -0 $$ 2>/dev/null; do
        sql_heartbeat "$1" "$2" | grep -v $'\tok$' >&2
    done
}

col() { local n=$1; shift; printf '%s\n' "$@" | cut -f"$n" | paste -sd,; }  # column n, comma-joined

echo "ready worker=$WORKER_ID entrypoints=$(paste -sd, <<<"$EPS")"
upkept=-5
while ((!STOP)); do
    if ((SECONDS - upkept >= 5)); then  # the queue's upkeep (pgq.maintain), every 5 s
        q <<<'SELECT state FROM pgq.maintain()' >/dev/null || echo "maintain failed" >&2
        upkept=$SECONDS
    fi
    jobs=()
    claimed=$(sql_claim) && [[ -n $claimed ]] && mapfile -t jobs <<<"$claimed"
    for ((i = 0; i < ${#jobs[@]}; i++)); do
        IFS=$'\t' read -r id lease ep attempt cadence payload <<<"${jobs[i]}"
        if ((STOP)); then  # give back this job and the rest of the batch, never started
            for released in $(sql_release "$(col 1 "${jobs[@]:i}")" "$(col 2 "${jobs[@]:i}")"); do
                echo "released job=$released"
            done
            break
        fi
        beat "$(col 1 "${jobs[@]:i}")" "$(col 2 "${jobs[@]:i}")" "$cadence" &  # this job, the rest
        beater=$!
        log started "$id" "$ep" "$attempt"
        errfile=$(mktemp)
        out=$("handle_$ep" "$payload" 2>"$errfile") && outcome=successful || outcome=failed
        kill "$beater" 2>/dev/null
        wait "$beater" 2>/dev/null
        status=$(sql_complete "$id" "$lease" "$outcome" "$out" "$(<"$errfile")") || status=unwritten
        rm -f "$errfile"  # unwritten: an error (on stderr); the lease runs out, the job runs again
        log "${status:-refused}" "$id" "$ep" "$attempt"  # refused: the lease was not ours any more
    done
    if ((${#jobs[@]} == 0 && !STOP)); then
        sleep "$(sql_idle_seconds || echo "$POLL_S")" &
        wait $! || kill $! 2>/dev/null  # a signal ends the wait at once
    fi
done
echo stopped
