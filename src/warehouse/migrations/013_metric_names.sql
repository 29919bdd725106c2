-- The metric names accuracy results hold since the event metrics, the Brier decomposition, the
-- skill scores of quantile models and the summary statistics (issue 13; docs/accuracy.md).
-- Their comment only (now in ../comments.yaml): no table changes.

