-- flow: empty in Linux kernel traces (flows come from track events and binder), but there to join.
select count(*) as flows from flow;
