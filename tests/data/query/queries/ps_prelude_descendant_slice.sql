-- descendant_slice(id) called per slice: children and grandchildren of the
-- root slices and of every 8th slice (the columns in order; thread slices
-- have no args).
SELECT s.id AS of_id, d.*
FROM slice AS s JOIN descendant_slice(s.id) AS d
WHERE d.depth <= s.depth + 2 AND (s.depth = 0 OR s.id % 8 = 0)
  AND s.arg_set_id IS NULL AND d.arg_set_id IS NULL
ORDER BY s.id, d.id
LIMIT 150;
