select trace_start() as trace_start, trace_end() as trace_end, trace_dur() as trace_dur;
