-- metadata: the rows sluice's importer can know from the trace itself
-- (SystemInfo's uname and service version, the session name, the trace type,
-- the file size, the uuid); trace_config_pbtxt has its own query
-- (metadata_config.sql). Left out: upstream's own bookkeeping
-- (trace_time_clock_id, system_ram_bytes/system_ram_gb, timezone_off_mins,
-- ftrace_latest_data_start_ns).
select name, key_type, int_value, str_value
from metadata
where name in ('trace_uuid', 'trace_type', 'trace_size_bytes', 'system_name',
               'system_version', 'system_release', 'system_machine',
               'tracing_service_version', 'unique_session_name')
order by name;
