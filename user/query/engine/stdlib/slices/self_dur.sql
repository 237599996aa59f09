-- slice_self_dur: each slice's self duration, its dur less the durations of
-- its direct children (time in the slice but in none of them).
--
-- As upstream, nothing is clamped: an unfinished child (dur -1) takes 1
-- away, and an unfinished slice (dur -1) with finished children comes out
-- negative.

-- The children's total per parent, summed once: a correlated sum per slice
-- would scan the slice table once per slice.
CREATE PERFETTO TABLE _slice_self_dur_children AS
SELECT parent_id, sum(dur) AS children_dur
FROM slice
WHERE parent_id IS NOT NULL
GROUP BY parent_id;

CREATE PERFETTO INDEX _slice_self_dur_children_by_parent ON _slice_self_dur_children(parent_id);

CREATE PERFETTO TABLE slice_self_dur(
  id ID(slice.id),
  self_dur DURATION
) AS
SELECT s.id, s.dur - coalesce(c.children_dur, 0) AS self_dur
FROM slice AS s
LEFT JOIN _slice_self_dur_children AS c ON c.parent_id = s.id
ORDER BY s.id;
