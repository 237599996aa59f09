-- Tracks with their descriptor args (track events: source, trace_id,
-- is_root_in_scope, description) and their thread or process. Only a
-- descriptor's description: upstream also describes its other tracks in
-- prose of its own, which sluice does not copy.
select t.id, t.name, t.type, t.track_group_id,
  extract_arg(t.source_arg_set_id, 'source') as source,
  extract_arg(t.source_arg_set_id, 'trace_id') as trace_id,
  extract_arg(t.source_arg_set_id, 'is_root_in_scope') as is_root_in_scope,
  extract_arg(t.source_arg_set_id, 'has_first_packet_on_sequence') as first_packet,
  iif(extract_arg(t.source_arg_set_id, 'source') = 'descriptor',
      extract_arg(t.source_arg_set_id, 'description'), null) as description,
  tt.utid, pt.upid
from track t
left join thread_track tt using (id)
left join process_track pt using (id)
order by t.id;
