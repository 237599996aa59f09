-- ancestor_slice(id)'s own order (outermost first), for the first slice of
-- depth 6, or else the deepest.
SELECT id, ts, dur, depth, parent_id, name
FROM ancestor_slice((SELECT id FROM slice ORDER BY depth = 6 DESC, depth DESC, id LIMIT 1));
