# ftrace parsing: the page benchmark compares sluice's page parser with
# libtraceevent (Debian libtraceevent-dev) in the same binary.
#   BENCH_LDLIBS  libraries for build/bench/* (root Makefile), + -ltraceevent
BENCH_LDLIBS += -ltraceevent
