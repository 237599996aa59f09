-- descendant_slice(id) of every slice, summed per track; and a NULL id.
SELECT s.track_id, count(DISTINCT s.id) AS slices, count(d.id) AS descendants,
  sum(d.id) AS ids, sum(d.depth) AS depths, sum(d.depth - s.depth) AS distances, sum(d.ts) AS tss,
  sum(d.dur) AS durs, sum(d.track_id = s.track_id) AS same_track, count(d.arg_set_id) AS with_args,
  sum(d.dur = 0) AS instants, (SELECT count(*) FROM descendant_slice(NULL)) AS of_null
FROM slice AS s LEFT JOIN descendant_slice(s.id) AS d
GROUP BY s.track_id
ORDER BY s.track_id;
