-- pgq._streaks(errors): what a job's error list says about its interruptions and snoozes.
-- Contract: interrupted is the number of entries at the end of the list that are interrupted
--   attempts (outcome 'interrupted', or a counted interruption: details.interrupted true), the
--   streak pgq.complete bounds with max_interruptions; any other entry (a failure, a sweep, a
--   snooze) ends the streak. snoozed is the number of snoozes in the whole list (outcome
--   'snoozed'), which pgq.complete bounds with max_snoozes. NULL or '[]' gives 0 and 0.
-- Locking: none.
-- Errors: none.
CREATE OR REPLACE FUNCTION pgq._streaks(errors jsonb, OUT interrupted int, OUT snoozed int)
LANGUAGE sql
IMMUTABLE
SET search_path = pg_catalog, pgq, pg_temp
AS $$
    SELECT (coalesce(jsonb_array_length(errors), 0)
            - coalesce(max(e.ord) FILTER (WHERE NOT coalesce(e.v ->> 'outcome' = 'interrupted'
                                                            OR e.v -> 'details' ->> 'interrupted' = 'true', false)), 0))::int,
           (count(*) FILTER (WHERE e.v ->> 'outcome' = 'snoozed'))::int
      FROM jsonb_array_elements(coalesce(errors, '[]'::jsonb)) WITH ORDINALITY AS e(v, ord)
$$;
COMMENT ON FUNCTION pgq._streaks(jsonb) IS
    'Private. From an error list: interrupted attempts in a row at its end, and snoozes in all.';
