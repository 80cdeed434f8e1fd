-- pgq._hist_quantiles: quantiles of the sparse log histograms of pgq.metrics_buckets.
BEGIN;
SELECT plan(7);

SELECT is(pgq._hist_quantiles('{}', '{}', '{0.5,0.99}'), ARRAY[NULL, NULL]::float8[], 'empty: NULLs');
-- bin 55 holds [0.0001 * 2^13.25, 0.0001 * 2^13.5): 0.974 s to 1.159 s
SELECT ok((SELECT bool_and(q BETWEEN 0.9741 AND 1.1586) FROM unnest(pgq._hist_quantiles('{55}', '{10}', '{0.01,0.5,1}')) q),
          'one bin: every quantile lies inside it');
SELECT ok((SELECT q[1] < q[2] AND q[2] < q[3] FROM pgq._hist_quantiles('{55}', '{10}', '{0.1,0.5,0.9}') q),
          'interpolated inside the bin (increasing)');
SELECT is(pgq._hist_quantiles('{55,59}', '{1,1}', '{1}'), ARRAY[0.0001 * 2 ^ 14.5]::float8[],
          'q = 1: the top of the highest bin');
SELECT is(pgq._hist_quantiles('{55,59}', '{99,1}', '{0.5}') < ARRAY[1.16]::float8[], true, '99 of 100 in the low bin: p50 there');
SELECT is(pgq._hist_quantiles('{1}', '{4}', '{0.5}'), ARRAY[0.00005]::float8[], 'bin 1 (under 100 us): linear from 0');
SELECT is(pgq._hist_quantiles('{130}', '{4}', '{0.5}'), ARRAY[0.0001 * 2 ^ 32]::float8[], 'bin 130: its lower bound');

SELECT * FROM finish();
ROLLBACK;
