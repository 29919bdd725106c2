-- The metric names accuracy results hold since the event metrics, the Brier decomposition, the
-- skill scores of quantile models and the summary statistics (issue 13; docs/accuracy.md).
-- Comments only: no table changes.

COMMENT ON COLUMN accuracy_results.metric IS 'n, dropped*, mape_skipped, mae, mbe, rmse, mape, nmae, nmbe, nrmse, skill, rmse_ref, r, r2, crmse, red, ksi, over, cpi, actual_<mean|min|max|median|std>, forecast_<mean|min|max|median|std>, per quantile level <pinball|qss|below|bs|rel|res|unc>_q<percent>, crps, crps_pinball, crps_ref, crpss, coverage, coverage_nominal, per event <tp|fp|tn|fn|pod|far|pofd|csi|ebias|ea>_<event name>';
