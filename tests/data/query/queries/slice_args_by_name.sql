-- Every slice's args by slice and key (debug annotations: nested dicts as
-- dotted keys, arrays as [i]), with flat_key and the value's type.
select s.ts, s.name, a.flat_key, a.key, a.int_value, a.string_value, a.real_value, a.value_type
from slice s
join args a on a.arg_set_id = s.arg_set_id
order by s.ts, s.name, a.key;
