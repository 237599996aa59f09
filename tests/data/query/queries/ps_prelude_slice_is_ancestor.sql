-- slice_is_ancestor(a, d) over pairs of nearby slices on a track (and with
-- an id no slice has), summed per track.
SELECT a.track_id, count(*) AS pairs,
  sum(slice_is_ancestor(a.id, d.id)) AS ancestor_pairs,
  sum(slice_is_ancestor(a.id, d.id) IS NULL) AS null_pairs,
  sum(slice_is_ancestor(a.id, d.id) * (a.id + 3 * d.id)) AS weighted,
  sum(slice_is_ancestor(a.id, -1) IS NULL) AS unknown_id
FROM slice AS a JOIN slice AS d ON d.track_id = a.track_id AND d.id BETWEEN a.id - 3 AND a.id + 3
GROUP BY a.track_id
ORDER BY a.track_id;
