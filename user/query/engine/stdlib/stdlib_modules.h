// The standard-library modules `INCLUDE PERFETTO MODULE` runs: sluice's own
// SQL under upstream Perfetto's module names, with upstream's table, view,
// function and column names (upstream's stdlib reference is the spec). Each
// is a file under user/query/engine/stdlib/ (sched/time_in_state.sql is
// module sched.time_in_state) that opens with a `--` comment saying what it
// gives; mk/stdlib.mk compiles them in. docs/QUERY.md lists them.
//
// The modules named prelude.* are what upstream offers without an INCLUDE:
// QueryEngine runs them when it opens a trace.
//
// SLUICE_STDLIB_DIR=DIR reads the modules from DIR instead of the
// compiled-in copies (DIR=user/query/engine/stdlib: edit a module and run it
// again without rebuilding).
#ifndef SLUICE_USER_QUERY_ENGINE_STDLIB_STDLIB_MODULES_H_
#define SLUICE_USER_QUERY_ENGINE_STDLIB_STDLIB_MODULES_H_

#include <string>
#include <string_view>
#include <vector>

namespace sluice {

struct StdlibModule {
  std::string name;  // "sched.time_in_state"
  std::string_view sql;
  // The first sentence of the file's opening comment.
  std::string Description() const;
};

// Every module, sorted by name.
const std::vector<StdlibModule>& StdlibModules();
const StdlibModule* FindStdlibModule(std::string_view name);

// Why `name` cannot be included, as one line: a module upstream writes for
// Android or Chrome data, one sluice does not have (yet), or one that does
// not exist anywhere.
std::string WhyNoStdlibModule(std::string_view name);

}  // namespace sluice

#endif  // SLUICE_USER_QUERY_ENGINE_STDLIB_STDLIB_MODULES_H_
