-- metadata: what a session says of itself (service milestones, triggers,
-- attributes, Android build) and the trace's clock, single and multi keys.
select name, key_type, int_value, str_value
from metadata
where name in ('tracing_started_ns', 'all_data_source_started_ns', 'all_data_source_flushed_ns',
               'tracing_disabled_ns', 'slow_start_data_source', 'trace_trigger', 'trace_time_clock_id',
               'android_build_fingerprint', 'android_incremental_build', 'android_sdk_version',
               'unique_session_name')
   or name glob 'trace_attribute.*'
order by name, int_value, str_value;
