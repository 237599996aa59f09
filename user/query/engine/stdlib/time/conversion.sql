-- Unit conversions between nanosecond trace timestamps and durations and
-- other units. time_from_<unit>(n) turns n of that unit into nanoseconds;
-- time_to_<unit>(ns) turns nanoseconds into whole units (integer division,
-- as SQLite divides integers: truncated toward zero). NULL gives NULL.

CREATE PERFETTO FUNCTION time_from_ns(nanos LONG) RETURNS TIMESTAMP AS SELECT $nanos;
CREATE PERFETTO FUNCTION time_from_us(micros LONG) RETURNS LONG AS SELECT $micros * 1000;
CREATE PERFETTO FUNCTION time_from_ms(millis LONG) RETURNS TIMESTAMP AS SELECT $millis * 1000 * 1000;
CREATE PERFETTO FUNCTION time_from_s(seconds LONG) RETURNS TIMESTAMP AS SELECT $seconds * 1000 * 1000 * 1000;
CREATE PERFETTO FUNCTION time_from_min(minutes LONG) RETURNS TIMESTAMP
AS SELECT $minutes * 60 * 1000 * 1000 * 1000;
CREATE PERFETTO FUNCTION time_from_hours(hours LONG) RETURNS TIMESTAMP
AS SELECT $hours * 60 * 60 * 1000 * 1000 * 1000;
CREATE PERFETTO FUNCTION time_from_days(days LONG) RETURNS LONG
AS SELECT $days * 24 * 60 * 60 * 1000 * 1000 * 1000;

CREATE PERFETTO FUNCTION time_to_ns(nanos TIMESTAMP) RETURNS LONG AS SELECT $nanos;
CREATE PERFETTO FUNCTION time_to_us(nanos TIMESTAMP) RETURNS LONG AS SELECT $nanos / 1000;
CREATE PERFETTO FUNCTION time_to_ms(nanos TIMESTAMP) RETURNS LONG AS SELECT $nanos / (1000 * 1000);
CREATE PERFETTO FUNCTION time_to_s(nanos TIMESTAMP) RETURNS LONG AS SELECT $nanos / (1000 * 1000 * 1000);
CREATE PERFETTO FUNCTION time_to_min(nanos TIMESTAMP) RETURNS LONG AS SELECT $nanos / (60 * 1000 * 1000 * 1000);
CREATE PERFETTO FUNCTION time_to_hours(nanos TIMESTAMP) RETURNS LONG
AS SELECT $nanos / (60 * 60 * 1000 * 1000 * 1000);
CREATE PERFETTO FUNCTION time_to_days(nanos TIMESTAMP) RETURNS LONG
AS SELECT $nanos / (24 * 60 * 60 * 1000 * 1000 * 1000);
