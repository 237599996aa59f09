-- time.conversion over the trace's own bounds.
INCLUDE PERFETTO MODULE time.conversion;
SELECT time_to_us(trace_dur()) AS us, time_to_ms(trace_dur()) AS ms, time_to_s(trace_end()) AS s,
  time_from_ms(time_to_ms(trace_start())) AS start_ms_ns, time_from_us(7) AS us7, time_to_min(time_from_hours(2)) AS m;
