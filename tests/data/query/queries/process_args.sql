-- process: start times from process_tree ages and the is_kthread arg.
select pid, name, start_ts, extract_arg(arg_set_id, 'is_kthread') as is_kthread
from process order by pid, start_ts;
