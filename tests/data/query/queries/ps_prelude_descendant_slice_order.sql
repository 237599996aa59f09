-- descendant_slice(id)'s own order (slice order), for the root slice with
-- the most descendants of those with at most 40.
SELECT id, ts, dur, depth, parent_id, name
FROM descendant_slice((
  SELECT s.id FROM slice AS s
  WHERE s.depth = 0 AND (SELECT count(*) FROM descendant_slice(s.id)) <= 40
  ORDER BY (SELECT count(*) FROM descendant_slice(s.id)) DESC, s.id
  LIMIT 1));
