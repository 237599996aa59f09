-- ancestor_slice(id) of every slice, summed per track; and a NULL id.
SELECT s.track_id, count(DISTINCT s.id) AS slices, count(a.id) AS ancestors,
  sum(a.id) AS ids, sum(a.depth) AS depths, sum(s.depth - a.depth) AS distances, sum(a.ts) AS tss,
  sum(a.dur) AS durs, sum(a.track_id = s.track_id) AS same_track, count(a.arg_set_id) AS with_args,
  (SELECT count(*) FROM ancestor_slice(NULL)) AS of_null
FROM slice AS s LEFT JOIN ancestor_slice(s.id) AS a
GROUP BY s.track_id
ORDER BY s.track_id;
