-- linux_kernel_threads: every row.
INCLUDE PERFETTO MODULE linux.threads;
SELECT * FROM linux_kernel_threads ORDER BY utid LIMIT 190;
