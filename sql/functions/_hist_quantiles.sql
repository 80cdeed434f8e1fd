-- pgq._hist_quantiles(bins, counts, qs): quantiles of a log-bucketed histogram, in seconds.
-- Contract: bins (ascending, no repeats) and counts are a sparse histogram as written by
--   pgq.rollup_metrics: bin 1 holds durations under 100 us, bin k (2..129) those from
--   0.0001 * 2^((k-2)/4) up to 0.0001 * 2^((k-1)/4) seconds, bin 130 those from 2^32 * 100 us
--   (429,497 s) on. For each q of qs (ascending, each in [0, 1]) returns the duration below
--   which a share q of the samples lies, interpolated geometrically inside its bin (linearly
--   in bin 1; bin 130 answers its lower bound), so an answer is off by at most one bin width
--   (about 19 %). NULL elements when the histogram is empty.
-- Locking: none.
-- Errors: none.
CREATE OR REPLACE FUNCTION pgq._hist_quantiles(bins int[], counts bigint[], qs float8[])
RETURNS float8[]
LANGUAGE plpgsql
IMMUTABLE
SET search_path = pg_catalog, pgq, pg_temp
AS $$
DECLARE
    v_total  float8 := 0;
    v_cum    float8 := 0;
    v_out    float8[] := '{}';
    v_i      int := 1;
    v_target float8;
    v_frac   float8;
    v_n      int := coalesce(cardinality(bins), 0);
    v_q      float8;
BEGIN
    FOR k IN 1 .. v_n LOOP
        v_total := v_total + counts[k];
    END LOOP;
    FOREACH v_q IN ARRAY qs LOOP
        IF v_total <= 0 THEN
            v_out := v_out || NULL::float8;
            CONTINUE;
        END IF;
        v_target := v_q * v_total;
        -- Move to the bin where the cumulative count reaches the target (qs are ascending).
        WHILE v_i < v_n AND v_cum + counts[v_i] < v_target LOOP
            v_cum := v_cum + counts[v_i];
            v_i := v_i + 1;
        END LOOP;
        v_frac := least(1, greatest(0, (v_target - v_cum) / greatest(counts[v_i], 1)));
        v_out := v_out || CASE WHEN bins[v_i] <= 1 THEN 0.0001 * v_frac
                               WHEN bins[v_i] >= 130 THEN 0.0001 * 2 ^ 32
                               ELSE 0.0001 * 2 ^ ((bins[v_i] - 2 + v_frac) / 4.0) END;
    END LOOP;
    RETURN v_out;
END
$$;
COMMENT ON FUNCTION pgq._hist_quantiles(int[], bigint[], float8[]) IS
    'Private. Quantiles (seconds) of a sparse log-bucketed histogram of pgq.metrics_buckets, interpolated inside the bin.';
