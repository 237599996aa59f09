-- machine: the one row of a single-machine trace, from its SystemInfo.
select * from machine;
