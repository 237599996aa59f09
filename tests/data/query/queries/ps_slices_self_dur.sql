-- slice_self_dur: the first 150 slices' self durations.
INCLUDE PERFETTO MODULE slices.self_dur;
SELECT * FROM slice_self_dur ORDER BY id LIMIT 150;
