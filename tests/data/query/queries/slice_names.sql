-- slices by name: how many, their total duration and depths (syscall names by number, suspend phases).
select name, count(*) as n, sum(dur) as total_dur, min(depth) as min_depth, max(depth) as max_depth
from slice group by name order by name;
