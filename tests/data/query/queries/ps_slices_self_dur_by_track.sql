-- slice_self_dur summed per track (unfinished slices and children count as
-- they are).
INCLUDE PERFETTO MODULE slices.self_dur;
SELECT s.track_id, count(*) AS slices, sum(d.self_dur) AS self_durs, min(d.self_dur) AS min_self,
  max(d.self_dur) AS max_self, sum(d.self_dur < 0) AS negative, sum(d.self_dur = s.dur) AS leaves
FROM slice_self_dur AS d JOIN slice AS s USING (id)
GROUP BY s.track_id
ORDER BY s.track_id;
