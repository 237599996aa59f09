-- metadata: the rows sluice's importer can know from the trace itself
-- (TraceUuid, SystemInfo's uname and service version, the session name, the
-- file size); the rest (trace_config_pbtxt, trace_type, clock ids, derived
-- RAM figures) is upstream's own bookkeeping.
select name, key_type, int_value, str_value
from metadata
where name in ('trace_uuid', 'trace_size_bytes', 'system_name', 'system_version',
               'system_release', 'system_machine', 'tracing_service_version',
               'unique_session_name')
order by name;
