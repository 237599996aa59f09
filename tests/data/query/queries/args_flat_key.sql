-- slice args by flat key and key (args[0] -> args), with their value types.
select a.flat_key, a.key, a.value_type, count(*) as n
from slice s join args a using (arg_set_id)
group by a.flat_key, a.key, a.value_type
order by a.flat_key, a.key, a.value_type;
