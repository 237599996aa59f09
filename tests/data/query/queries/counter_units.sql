-- counter tracks: name, type and unit (sys_stats' tracks carry units).
select name, type, unit from counter_track order by type, name;
