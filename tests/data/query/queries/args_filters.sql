-- args filtered by key, value type, flat key, string and display value, as
-- the queries of Perfetto's docs filter them. The type counts leave out
-- args sluice does not have: upstream's track descriptions (its own prose)
-- and the args of its import-log rows (packet_sequence_id,
-- current_slice_name, parent_slice_name).
select
  (select count(*) from args where key = 'prev_pid') as by_key,
  (select count(*) from args where key in ('sector', 'producer_name', 'utid', 'ret')) as by_keys,
  (select count(*) from args where value_type = 'string'
     and key not in ('description', 'current_slice_name', 'parent_slice_name')) as strings,
  (select count(*) from args where value_type in ('int', 'uint') and key != 'packet_sequence_id') as ints,
  (select count(*) from args where flat_key = 'args') as by_flat_key,
  (select count(*) from args where string_value = 'swapper/1') as by_string,
  (select count(*) from args where display_value = '120') as by_display,
  (select count(*) from args where key = 'no such key') as none;
