// Traces of several machines built by hand (a host and the machines relayed
// into it, docs/RELAY.md), for the query, stats and report tests.
#ifndef SLUICE_TESTS_USER_QUERY_MULTI_MACHINE_TEST_UTIL_H_
#define SLUICE_TESTS_USER_QUERY_MULTI_MACHINE_TEST_UTIL_H_

#include <string>

namespace sluice::testing {

// The host (2 CPUs) and two guests: machine_id 1 ("guest-a", 2 CPUs, its
// boot clock ~400 ms behind the host's and drifting 1 us between two
// syncs) and machine_id 7 ("guest-b", 1 CPU, ahead of the host, a 4.4
// kernel). All three
// have a pid 1, a pid 100 and a tid 102. Each guest's TraceStats says what
// it lost on the way; the host's final one has the relay's figures.
std::string TwoGuestsTrace();

// The same host data without any machine_id.
std::string HostOnlyTrace();

}  // namespace sluice::testing

#endif  // SLUICE_TESTS_USER_QUERY_MULTI_MACHINE_TEST_UTIL_H_
