#!/usr/bin/env bash
# A pgq-thin worker in bash + psql: claim, heartbeat, complete, release on SIGTERM, poll.
#
#   examples/psql/worker.sh [ENTRYPOINT ...]     (default: echo fail flaky sleep nap doom)
#
# Connection: PGQ_DSN (any libpq connection string) or libpq's PGHOST, PGPORT, PGDATABASE...
# PGQ_WORKER_ID (a uuid; default random), PGQ_BATCH (jobs per claim, default 1),
# PGQ_POLL_S (longest idle wait in seconds, default 5), PGQ_GRACE_S (see below; default: none).
# SIGTERM/SIGINT: finish the job in hand (within PGQ_GRACE_S, else it is cut off and reported
# interrupted), give back the claimed jobs not started, exit 0. A job canceled, lost or timed
# out (past the time limit its claim answered: SQL failed the attempt) while it runs has its
# handler stopped (a canceled one is reported canceled, a timed-out one not at all).
set -uo pipefail

# Demo handlers, chosen by entrypoint: the payload (JSON text) in $1, the attempt in $2; print
# the result as JSON (or nothing) and return 0, or print a message on stderr and return non-zero
# to fail: 75 (EX_TEMPFAIL) snoozes for the seconds printed on stdout (no attempt used), 65
# (EX_DATAERR) says the job can never succeed (fatal: dead at once), anything else fails.
handle_echo() { printf '%s' "$1"; }
handle_fail() { echo "demo failure: $1" >&2; return 3; }
handle_flaky() {  # {"fails": N}: fails its first N attempts
    local fails=1
    [[ $1 =~ \"fails\":\ *([0-9]+) ]] && fails=${BASH_REMATCH[1]}
    (($2 > fails)) || { echo "flaky failure: attempt $2" >&2; return 3; }
    echo '"recovered"'
}
handle_sleep() {  # {"ms": N}
    local ms=1000
    [[ $1 =~ \"ms\":\ *([0-9]+) ]] && ms=${BASH_REMATCH[1]}
    sleep "$((ms / 1000)).$(printf '%03d' $((ms % 1000)))" && echo '"slept"'
}
handle_nap() { echo 0.1; return 75; }                        # snooze 0.1 s
handle_doom() { echo "doomed: $1" >&2; return 65; }          # can never succeed

WORKER_ID=${PGQ_WORKER_ID:-$(cat /proc/sys/kernel/random/uuid)}
BATCH=${PGQ_BATCH:-1}
POLL_S=${PGQ_POLL_S:-5}
GRACE_S=${PGQ_GRACE_S:-}
(($#)) && ENTRYPOINTS=("$@") || ENTRYPOINTS=(echo fail flaky sleep nap doom)
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
    # The cadence: a third of the shortest heartbeat timeout, and just past the job's time limit
    # (run_timeout_s) when it is shorter: that beat answers timed_out.
    q -v batch="$BATCH" <<'SQL'
SELECT id, lease, entrypoint, attempt,
       round(least(min(heartbeat_timeout_s) OVER () / 3, run_timeout_s + 0.05)::numeric, 3), payload
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
        WHEN 'canceled' THEN jsonb_build_object('error', 'canceled')
        WHEN 'interrupted' THEN jsonb_build_object('error', 'WorkerShutdown', 'message', :'err')
        WHEN 'snoozed' THEN jsonb_build_object('error', 'Snooze', 'snooze', nullif(:'out', '')::jsonb)
        WHEN 'fatal' THEN jsonb_build_object('error', 'HandlerFatal', 'message', :'err')
        ELSE jsonb_build_object('error', 'HandlerFailed', 'message', :'err') END));
SQL
}
sql_release() {  # ids leases (comma-separated) -> ids released
    q -v ids="$1" -v leases="$2" <<'SQL'
SELECT id FROM pgq.release(:'worker', string_to_array(:'ids', ',')::bigint[],
                          string_to_array(:'leases', ',')::bigint[]);
SQL
}
sql_register() {  # -> the heartbeat interval (s) that keeps this worker fresh in the registry
    # Registered, its entrypoints count as served (pgq.metrics; a registered scheduler fires
    # only schedules some live worker serves); a heartbeat with no jobs keeps it fresh.
    q <<'SQL'
SELECT extract(epoch FROM heartbeat_interval)::numeric(10, 3)
  FROM pgq.register_worker(:'worker', string_to_array(:'eps', E'\n'),
                           application_name => 'psql worker',
                           metadata => '{"client": "examples/psql"}');
SQL
}
sql_unregister() { q <<<"SELECT pgq.unregister_worker(:'worker')" >/dev/null; }
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
# while this shell lives; reports what is not "ok" (lost, cancel_requested, timed_out) on
# stderr, and for the job in hand ($4) stops its handler ($5), noting a cancel or a time-out in
# file $6. (The sleep holds no
# output open: it may outlive the loop by one pause.)
beat() {
    while sleep "$3" </dev/null &>/dev/null && kill -0 $$ 2>/dev/null; do
        sql_heartbeat "$1" "$2" | while IFS=$'\t' read -r job state; do
            [[ $state == ok ]] && continue
            printf '%s\t%s\n' "$job" "$state" >&2
            [[ $job == "$4" ]] || continue
            [[ $state == cancel_requested ]] && echo canceled >"$6"
            [[ $state == timed_out ]] && echo timed_out >"$6"
            stop_handler "$5"
        done
    done
}
stop_handler() { pkill -TERM -P "$1" 2>/dev/null; kill "$1" 2>/dev/null; }  # its children, then it

# Waits for the handler ($1) and returns its status; a stop request (SIGTERM) ends the wait
# early, and with PGQ_GRACE_S set the handler gets that long, then it is stopped and
# "interrupted" noted in file $2.
finish() {
    local timer=
    while :; do
        wait "$1"
        local rc=$?
        kill -0 "$1" 2>/dev/null || break  # it ended (else the signal's trap ended the wait)
        if ((STOP)) && [[ -n $GRACE_S && -z $timer ]]; then
            (sleep "$GRACE_S"; echo interrupted >"$2"; stop_handler "$1") </dev/null &>/dev/null &
            timer=$!
        fi
    done
    [[ -n $timer ]] && kill "$timer" 2>/dev/null
    return "$rc"
}

col() { local n=$1; shift; printf '%s\n' "$@" | cut -f"$n" | paste -sd,; }  # column n, comma-joined

REGISTRY_S=$(sql_register) || exit 1
echo "ready worker=$WORKER_ID entrypoints=$(paste -sd, <<<"$EPS")"
upkept=-5
refreshed=$SECONDS
while ((!STOP)); do
    if ((SECONDS - refreshed >= ${REGISTRY_S%.*})); then  # fresh in the registry while idle
        sql_heartbeat "" "" >/dev/null || echo "heartbeat failed" >&2
        refreshed=$SECONDS
    fi
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
        errfile=$(mktemp) outfile=$(mktemp) stopfile=$(mktemp)
        "handle_$ep" "$payload" "$attempt" >"$outfile" 2>"$errfile" &
        handler=$!
        beat "$(col 1 "${jobs[@]:i}")" "$(col 2 "${jobs[@]:i}")" "$cadence" "$id" "$handler" \
            "$stopfile" &  # this job, the rest
        beater=$!
        log started "$id" "$ep" "$attempt"
        finish "$handler" "$stopfile"
        case $? in 0) outcome=successful ;; 75) outcome=snoozed ;; 65) outcome=fatal ;; *) outcome=failed ;; esac
        [[ -s $stopfile ]] && outcome=$(<"$stopfile")  # canceled, interrupted or timed_out
        kill "$beater" 2>/dev/null
        wait "$beater" 2>/dev/null
        if [[ $outcome == timed_out ]]; then  # SQL failed the attempt already: nothing to write
            status=timed_out
        else
            status=$(sql_complete "$id" "$lease" "$outcome" "$(<"$outfile")" "$(<"$errfile")") ||
                status=unwritten
        fi
        rm -f "$errfile" "$outfile" "$stopfile"  # unwritten: an error (on stderr); the lease runs
        # out, the job runs again
        log "${status:-refused}" "$id" "$ep" "$attempt"  # refused: the lease was not ours any more
    done
    if ((${#jobs[@]} == 0 && !STOP)); then
        sleep "$(sql_idle_seconds || echo "$POLL_S")" &
        wait $! || kill $! 2>/dev/null  # a signal ends the wait at once
    fi
done
sql_unregister || echo "unregister failed" >&2
echo stopped
