-- pgq._check_cron(cron): a cron expression every scheduler can compute times for.
-- Contract: returns the expression with its whitespace normalised (fields separated by one
--   space). Accepted: 5 fields (minute hour day-of-month month day-of-week) or 6 (a seconds
--   field first). Each field is a comma-separated list of items; an item is `*`, a value, or a
--   range `a-b` (a <= b), each optionally followed by `/step` (1 <= step <= the field's span); a
--   value alone with a step (`5/15`) means from that value on. Values: seconds and minutes
--   0-59, hours 0-23, day of month 1-31, month 1-12 or jan-dec, day of week 0-7 (0 and 7 are
--   Sunday) or sun-sat, names in any case. Also `?` as a whole day field; `L` (last day) or `nW`
--   as the whole day of month when day of week is `*` or `?`; `d#n` (n-th weekday d of the
--   month, n 1-5) in day of week when day of month is `*` or `?`. A day of month
--   that no month of the month field has (`0 0 30 2 *`) is refused too, when the day of week
--   field is `*` or `?`. This is a subset of what croniter (the Python client's cron library)
--   accepts, so a stored schedule always has a next time; anything else is refused here.
-- Locking: none.
-- Errors: PQ011 naming the expression and the first bad field.
CREATE OR REPLACE FUNCTION pgq._check_cron(cron text)
RETURNS text
LANGUAGE plpgsql
IMMUTABLE
SET search_path = pg_catalog, pgq, pg_temp
AS $$
DECLARE
    c_kinds  constant text[] := ARRAY['second', 'minute', 'hour', 'day of month', 'month', 'day of week'];
    c_lo     constant int[]  := ARRAY[0, 0, 0, 1, 1, 0];
    c_hi     constant int[]  := ARRAY[59, 59, 23, 31, 12, 7];
    c_months constant text[] := ARRAY['jan', 'feb', 'mar', 'apr', 'may', 'jun', 'jul', 'aug', 'sep', 'oct', 'nov', 'dec'];
    c_days   constant text[] := ARRAY['sun', 'mon', 'tue', 'wed', 'thu', 'fri', 'sat'];
    c_mdays  constant int[]  := ARRAY[31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];
    v_fields text[];
    v_k      int;
    v_item   text;
    v_m      text[];
    v_a      int;
    v_b      int;
    v_step   int;
    v_days   int[];
    v_months int[];
    v_plain  boolean := true;
    v_why    text;
BEGIN
    IF cron IS NULL OR octet_length(cron) > 1000 THEN
        RAISE EXCEPTION 'invalid cron expression %: expected 5 or 6 fields', coalesce(quote_literal(left(cron, 100)), 'NULL')
            USING ERRCODE = 'PQ011';
    END IF;
    v_fields := regexp_split_to_array(btrim(cron, E' \t\n\r'), '\s+');
    IF cardinality(v_fields) NOT IN (5, 6) THEN
        RAISE EXCEPTION 'invalid cron expression %: expected 5 or 6 fields', quote_literal(cron)
            USING ERRCODE = 'PQ011';
    END IF;
    FOR i IN 1 .. cardinality(v_fields) LOOP
        v_k := i + 6 - cardinality(v_fields);          -- index into c_kinds
        FOREACH v_item IN ARRAY string_to_array(lower(v_fields[i]), ',') LOOP
            v_why := NULL;
            IF v_item = '?' AND v_fields[i] <> '?' THEN
                v_why := '''?'' must be the whole field';
            ELSIF v_k = 4 AND (v_item = 'l' OR v_item ~ '^[0-9]{1,2}w$')
                  AND (lower(v_fields[i]) <> v_item OR v_fields[cardinality(v_fields)] NOT IN ('*', '?')) THEN
                v_why := format('%s must be the whole field, with * or ? as the day of week', quote_literal(v_item));
            ELSIF v_item IN ('?', 'l') OR v_item ~ '^[0-9]{1,2}w$' THEN
                IF v_k = 4 AND v_item IN ('?', 'l') THEN
                    v_plain := false;
                    CONTINUE;
                ELSIF v_k = 4 AND substr(v_item, 1, length(v_item) - 1)::int BETWEEN 1 AND 31 THEN
                    v_plain := false;
                    CONTINUE;
                ELSIF v_k = 6 AND v_item = '?' THEN
                    CONTINUE;
                END IF;
                v_why := format('%s is not allowed here', quote_literal(v_item));
            ELSIF v_k = 6 AND v_item ~ '^[a-z0-9]+#[0-9]+$' AND v_fields[i - 1] NOT IN ('*', '?') THEN
                v_why := format('%s needs * or ? as the day of month', quote_literal(v_item));
            ELSIF v_k = 6 AND v_item ~ '^[a-z0-9]+#[0-9]+$' THEN
                v_m := regexp_match(v_item, '^([a-z0-9]+)#([0-9]+)$');
                v_a := CASE WHEN v_m[1] ~ '^[0-9]{1,2}$' THEN v_m[1]::int ELSE array_position(c_days, v_m[1]) - 1 END;
                IF v_a IS NULL OR v_a NOT BETWEEN 0 AND 7 OR length(v_m[2]) > 1 OR v_m[2]::int NOT BETWEEN 1 AND 5 THEN
                    v_why := format('%s is not a weekday#n with n from 1 to 5', quote_literal(v_item));
                END IF;
            ELSE
                v_m := regexp_match(v_item, '^(\*|[a-z0-9]+)(?:-([a-z0-9]+))?(?:/([0-9]+))?$');
                IF v_m IS NULL OR (v_m[1] = '*' AND v_m[2] IS NOT NULL) THEN
                    v_why := format('%s is not *, a value or a range with an optional /step', quote_literal(v_item));
                ELSE
                    IF v_m[1] = '*' THEN
                        v_a := c_lo[v_k];
                        v_b := c_hi[v_k];
                    ELSE
                        v_a := CASE WHEN v_m[1] ~ '^[0-9]{1,2}$' THEN v_m[1]::int
                                    WHEN v_k = 5 THEN array_position(c_months, v_m[1])
                                    WHEN v_k = 6 THEN array_position(c_days, v_m[1]) - 1 END;
                        v_b := CASE WHEN v_m[2] IS NULL THEN CASE WHEN v_m[3] IS NULL THEN v_a ELSE c_hi[v_k] END
                                    WHEN v_m[2] ~ '^[0-9]{1,2}$' THEN v_m[2]::int
                                    WHEN v_k = 5 THEN array_position(c_months, v_m[2])
                                    WHEN v_k = 6 THEN array_position(c_days, v_m[2]) - 1 END;
                    END IF;
                    v_step := CASE WHEN v_m[3] IS NULL THEN 1 WHEN length(v_m[3]) <= 3 THEN v_m[3]::int END;
                    IF v_a IS NULL OR v_b IS NULL OR v_a NOT BETWEEN c_lo[v_k] AND c_hi[v_k]
                       OR v_b NOT BETWEEN c_lo[v_k] AND c_hi[v_k] THEN
                        v_why := format('%s is outside %s..%s', quote_literal(v_item), c_lo[v_k], c_hi[v_k]);
                    ELSIF v_a > v_b THEN
                        v_why := format('%s is a range that ends before it starts', quote_literal(v_item));
                    ELSIF v_step IS NULL OR v_step NOT BETWEEN 1 AND c_hi[v_k] - c_lo[v_k] + 1 THEN
                        v_why := format('%s has a step outside 1..%s', quote_literal(v_item), c_hi[v_k] - c_lo[v_k] + 1);
                    ELSIF v_k = 4 THEN
                        v_days := v_days || ARRAY(SELECT generate_series(v_a, v_b, v_step));
                    ELSIF v_k = 5 THEN
                        v_months := v_months || ARRAY(SELECT generate_series(v_a, v_b, v_step));
                    END IF;
                END IF;
            END IF;
            IF v_why IS NOT NULL THEN
                RAISE EXCEPTION 'invalid cron expression %: % field %',
                    quote_literal(cron), c_kinds[v_k], v_why
                    USING ERRCODE = 'PQ011';
            END IF;
        END LOOP;
    END LOOP;
    -- With a restricted day of week, croniter fires on days matching either day field.
    v_plain := v_plain AND v_fields[cardinality(v_fields)] IN ('*', '?');
    IF v_plain AND v_days IS NOT NULL
       AND (SELECT min(d) FROM unnest(v_days) AS d)
           > (SELECT max(c_mdays[m]) FROM unnest(coalesce(v_months, ARRAY[1,2,3,4,5,6,7,8,9,10,11,12])) AS m) THEN
        RAISE EXCEPTION 'invalid cron expression %: no month of the month field has day %',
            quote_literal(cron), (SELECT min(d) FROM unnest(v_days) AS d)
            USING ERRCODE = 'PQ011';
    END IF;
    RETURN array_to_string(v_fields, ' ');
END
$$;
COMMENT ON FUNCTION pgq._check_cron(text) IS
    'Private. Raises PQ011 unless the cron expression is one every scheduler can compute (5 or 6 fields, ranges, steps, names); returns it normalised.';
