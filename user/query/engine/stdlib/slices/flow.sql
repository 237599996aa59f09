-- Reachability along flows, for other modules: _slice_following_flow!(t)
-- gives, for each slice of t (a table with an id column) that starts a flow,
-- once per flow it starts, every slice its flows lead to, following flows forwards
-- (root_node_id, node_id, parent_node_id; the root itself with a NULL
-- parent).
--
-- Upstream searches the flow graph depth-first and keeps each slice once per
-- root, with the edge its search met first (the root itself: none). This is
-- a recursive SQL closure: a slice reached by two flows keeps the one from
-- the lowest slice id, which is the same edge whenever the flows form a tree
-- (as a trace's flows do: each flow id a chain).

CREATE PERFETTO MACRO _slice_following_flow(
  source_table TableOrSubquery
)
RETURNS TableOrSubquery
AS (
  -- A root comes once per flow leaving it, and each time gives its whole
  -- reach, as upstream's search does (a slice two flows leave is a root
  -- twice): _start tells the repeats apart.
  WITH RECURSIVE _reach(_start, root_node_id, node_id, parent_node_id) AS (
    SELECT f.id, f.slice_out, f.slice_out, NULL
    FROM flow AS f
    JOIN (SELECT id FROM $source_table) AS _source ON f.slice_out = _source.id
    UNION
    SELECT _reach._start, _reach.root_node_id, f.slice_in, f.slice_out
    FROM _reach CROSS JOIN flow AS f ON f.slice_out = _reach.node_id
  )
  SELECT root_node_id, node_id,
    IIF(node_id = root_node_id, NULL, MIN(parent_node_id)) AS parent_node_id
  FROM _reach
  GROUP BY _start, root_node_id, node_id
);
