-- intervals.overlap's _intervals_merge_root_and_children! and
-- _intervals_flatten! on literal intervals: children starting at their
-- root's start, siblings meeting, a grandchild ending with its parent, a
-- root without children, an empty root (left out), and ties given in
-- another order than by id.
include perfetto module intervals.overlap;
with
  roots(id, ts, dur) as (values (1, 0, 100), (2, 200, 50), (3, 300, 0), (4, 400, 100)),
  children(root_id, id, parent_id, ts, dur) as (values
    (1, 10, 1, 0, 40), (1, 11, 10, 20, 20), (1, 12, 1, 40, 30), (1, 13, 12, 40, 10),
    (4, 21, 4, 450, 20), (4, 20, 4, 420, 30), (4, 22, 20, 420, 10))
select root_id, id, ts, dur
from _intervals_flatten!(_intervals_merge_root_and_children!(roots, children))
order by root_id, ts, dur, id;
