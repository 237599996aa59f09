// The atrace category table (user/probes/ftrace/atrace_categories.h): names
// are unique and findable, entries are well formed, and a category expands
// to the events a kernel has.
#include "user/probes/ftrace/atrace_categories.h"

#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace sluice {
namespace {

TEST(AtraceCategoriesTest, NamesAreUniqueAndEntriesWellFormed) {
  std::set<std::string_view> names;
  for (const AtraceCategory& category : AtraceCategories()) {
    EXPECT_TRUE(names.insert(category.name).second) << category.name;
    EXPECT_EQ(FindAtraceCategory(category.name), &category);
    EXPECT_FALSE(category.description.empty()) << category.name;
    for (std::string_view entry : category.kernel_events) {
      const size_t slash = entry.find('/');
      EXPECT_NE(slash, std::string_view::npos) << entry;
      EXPECT_GT(slash, 0u) << entry;
      EXPECT_LT(slash + 1, entry.size()) << entry;
    }
  }
  for (const char* name : {"sched", "freq", "idle", "irq", "disk", "mmc", "sync", "workq", "memreclaim",
                           "binder_driver", "am", "gfx"})
    EXPECT_NE(FindAtraceCategory(name), nullptr) << name;
  EXPECT_EQ(FindAtraceCategory("shed"), nullptr);
}

TEST(AtraceCategoriesTest, ExpandsToWhatTheKernelHas) {
  const std::vector<std::string> available = {"sched/sched_switch", "sched/sched_wakeup", "sched/sched_waking",
                                              "cgroup/cgroup_mkdir", "cgroup/cgroup_rmdir", "irq/irq_handler_entry",
                                              "ipi/ipi_raise", "workqueue/workqueue_execute_start"};
  EXPECT_EQ(ExpandAtraceCategory(*FindAtraceCategory("sched"), available),
            (std::vector<std::string>{"sched/sched_switch", "sched/sched_waking", "cgroup/cgroup_mkdir",
                                      "cgroup/cgroup_rmdir", "ftrace/print"}));
  EXPECT_EQ(ExpandAtraceCategory(*FindAtraceCategory("irq"), available),
            (std::vector<std::string>{"irq/irq_handler_entry", "ipi/ipi_raise", "ftrace/print"}));
  // Nothing of it here, or user space only: trace_marker writes still.
  EXPECT_EQ(ExpandAtraceCategory(*FindAtraceCategory("binder_driver"), available),
            std::vector<std::string>{"ftrace/print"});
  EXPECT_EQ(ExpandAtraceCategory(*FindAtraceCategory("am"), available), std::vector<std::string>{"ftrace/print"});
}

}  // namespace
}  // namespace sluice
