-- ancestor_slice(id) called per slice: the ancestors of the first slices
-- that have any (the columns in order; thread slices have no args).
SELECT s.id AS of_id, a.*
FROM slice AS s JOIN ancestor_slice(s.id) AS a
WHERE s.arg_set_id IS NULL AND a.arg_set_id IS NULL
ORDER BY s.id, a.depth
LIMIT 150;
