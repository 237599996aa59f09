-- metadata: the trace's TraceConfig as upstream prints it (text format).
select name, key_type, str_value from metadata where name = 'trace_config_pbtxt';
