-- slices.hierarchy: the first slice of depth 2 (or the deepest) with its
-- ancestors and with its descendants, and the slices named with an 'a' (or
-- an 'e') kept and reparented under their nearest kept ancestor.
INCLUDE PERFETTO MODULE slices.hierarchy;
SELECT 'up' AS what, id, depth, parent_id, name
FROM _slice_ancestor_and_self((SELECT id FROM slice ORDER BY depth = 2 DESC, depth DESC, id LIMIT 1))
UNION ALL
SELECT 'down', id, depth, parent_id, name
FROM _slice_descendant_and_self((SELECT id FROM slice ORDER BY depth = 1 DESC, depth, id LIMIT 1))
UNION ALL
SELECT 'kept', id, depth, parent_id, name
FROM _slice_remove_nulls_and_reparent!(
  (SELECT id, parent_id, depth, iif(name GLOB '*[ae]*', name, NULL) AS name FROM slice), name)
ORDER BY 1, 2
LIMIT 400;
