-- slice: every slice with its track (type, name, thread or process), depth
-- and parent's name; ordered by time (the first 600).
select s.ts, s.dur, t.type, t.name as track, tt.utid, pt.upid, s.category, s.name, s.depth,
       (select p.name from slice p where p.id = s.parent_id) as parent
from slice s
join track t on t.id = s.track_id
left join thread_track tt on tt.id = s.track_id
left join process_track pt on pt.id = s.track_id
order by s.ts, s.depth, s.name
limit 600;
