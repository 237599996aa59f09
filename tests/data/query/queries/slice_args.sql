-- slice args: cookie, utid / end_utid, legacy_unnestable_* per slice.
select s.ts, s.name, a.key, a.int_value, a.string_value, a.value_type
from slice s
join args a using(arg_set_id)
order by s.ts, s.name, a.key;
