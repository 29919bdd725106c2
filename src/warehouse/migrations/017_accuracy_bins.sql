-- The histograms' bins numbered without an offset for positive values (src/accuracy/stats.ts,
-- binSql): adding one to every bin cost about a fifth of binning. The rows of 014's numbering are
-- computed again by the next accuracy run: the statistics' fingerprint (accuracy_stats_state)
-- carries the layout's version, so a warehouse whose statistics were kept by an older one
-- computes them again from the whole ledger.
COMMENT ON COLUMN accuracy_histograms.bin IS 'round(ln x * 250) for x > 0; -1000000 - round(ln(-x) * 250) for x < 0; -500000 for 0 (numbers grow with x)';
