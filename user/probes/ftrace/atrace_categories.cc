#include "user/probes/ftrace/atrace_categories.h"

#include <algorithm>
#include <set>

namespace sluice {

// The events follow Perfetto's table of predefined tracepoints (kept in step
// with Android's atrace), so a config means the same under both tools; the
// user-space categories are atrace's.
const std::vector<AtraceCategory>& AtraceCategories() {
  static const auto* categories = new std::vector<AtraceCategory>{
      {"adb", "ADB (user space)", {}},
      {"aidl", "AIDL calls (user space)", {}},
      {"am", "Activity Manager (user space)", {}},
      {"audio", "Audio (user space)", {}},
      {"binder_driver", "Binder kernel driver",
       {"binder/binder_transaction", "binder/binder_transaction_received", "binder/binder_transaction_alloc_buf",
        "binder/binder_set_priority"}},
      {"binder_lock", "Binder global lock", {"binder/binder_lock", "binder/binder_locked", "binder/binder_unlock"}},
      {"bionic", "Bionic C library (user space)", {}},
      {"camera", "Camera", {"lwis/*"}},
      {"dalvik", "Dalvik VM (user space)", {}},
      {"database", "Database (user space)", {}},
      {"disk", "Disk I/O",
       {"f2fs/f2fs_sync_file_enter", "f2fs/f2fs_sync_file_exit", "f2fs/f2fs_write_begin", "f2fs/f2fs_write_end",
        "f2fs/f2fs_iostat", "f2fs/f2fs_iostat_latency", "ext4/ext4_da_write_begin", "ext4/ext4_da_write_end",
        "ext4/ext4_sync_file_enter", "ext4/ext4_sync_file_exit", "block/block_bio_queue",
        "block/block_bio_complete", "ufs/ufshcd_command"}},
      {"freq", "CPU frequency",
       {"power/cpu_frequency", "power/gpu_frequency", "power/clock_set_rate", "power/clock_disable",
        "power/clock_enable", "clk/clk_set_rate", "clk/clk_disable", "clk/clk_enable",
        "power/cpu_frequency_limits", "power/suspend_resume", "cpuhp/cpuhp_enter", "cpuhp/cpuhp_exit",
        "cpuhp/cpuhp_pause", "msm_bus/*"}},
      {"gfx", "Graphics", {"mdss/*", "mali/*", "sde/*", "dpu/*", "g2d/*", "panel/panel_write_generic"}},
      {"hal", "Hardware modules (user space)", {}},
      {"i2c", "I2C events", {"i2c/*"}},
      {"idle", "CPU idle", {"power/cpu_idle"}},
      {"input", "Input (user space)", {}},
      {"ion", "ION allocation", {"kmem/ion_alloc_buffer_start"}},
      {"irq", "IRQ events", {"irq/*", "ipi/*"}},
      {"irqoff", "IRQ-disabled code sections", {"preemptirq/irq_enable", "preemptirq/irq_disable"}},
      {"load", "CPU load", {"cpufreq_interactive/*"}},
      {"membus", "Memory bus utilization", {"memory_bus/*"}},
      {"memory", "Memory",
       {"kmem/rss_stat", "kmem/ion_heap_grow", "kmem/ion_heap_shrink", "ion/ion_stat", "mm_event/mm_event_record",
        "dmabuf_heap/dma_heap_stat", "gpu_mem/gpu_mem_total"}},
      {"memreclaim", "Kernel memory reclaim",
       {"vmscan/mm_vmscan_direct_reclaim_begin", "vmscan/mm_vmscan_direct_reclaim_end",
        "vmscan/mm_vmscan_kswapd_wake", "vmscan/mm_vmscan_kswapd_sleep", "lowmemorykiller/*"}},
      {"mmc", "eMMC commands", {"mmc/*"}},
      {"network", "Network (user space)", {}},
      {"nnapi", "Neural networks API (user space)", {}},
      {"pagecache", "Page cache", {"filemap/*"}},
      {"pm", "Package Manager (user space)", {}},
      {"power", "Power management (user space)", {}},
      {"preemptoff", "Preemption-disabled code sections",
       {"preemptirq/preempt_enable", "preemptirq/preempt_disable"}},
      {"regulators", "Voltage and current regulators", {"regulator/*"}},
      {"res", "Resource loading (user space)", {}},
      {"rro", "Runtime resource overlay (user space)", {}},
      {"rs", "RenderScript (user space)", {}},
      {"sched", "CPU scheduling",
       {"sched/sched_switch", "sched/sched_waking", "sched/sched_blocked_reason", "sched/sched_cpu_hotplug",
        "sched/sched_pi_setprio", "sched/sched_process_exit", "cgroup/*", "oom/oom_score_adj_update",
        "task/task_rename", "task/task_newtask", "systrace/*", "scm/scm_call_start", "scm/scm_call_end"}},
      {"sm", "Sync Manager (user space)", {}},
      {"ss", "System Server (user space)", {}},
      {"sync", "Synchronization (fences)", {"sync/*", "fence/*", "dma_fence/*"}},
      {"thermal", "Thermal events", {"thermal/thermal_temperature", "thermal/cdev_update"}},
      {"vibrator", "Vibrator (user space)", {}},
      {"video", "Video (user space)", {}},
      {"view", "View system (user space)", {}},
      {"webview", "WebView (user space)", {}},
      {"wm", "Window Manager (user space)", {}},
      {"workq", "Kernel workqueues", {"workqueue/*"}},
  };
  return *categories;
}

const AtraceCategory* FindAtraceCategory(std::string_view name) {
  for (const AtraceCategory& category : AtraceCategories())
    if (category.name == name) return &category;
  return nullptr;
}

std::vector<std::string> ExpandAtraceCategory(const AtraceCategory& category,
                                              const std::vector<std::string>& available) {
  const std::set<std::string_view> have(available.begin(), available.end());
  std::vector<std::string> events;
  std::set<std::string> seen;
  auto add = [&](std::string_view event) {
    if (seen.insert(std::string(event)).second) events.emplace_back(event);
  };
  for (std::string_view entry : category.kernel_events) {
    if (entry.ends_with("/*")) {
      const std::string_view group = entry.substr(0, entry.size() - 1);  // "group/"
      for (const std::string& event : available)
        if (std::string_view(event).starts_with(group)) add(event);
    } else if (have.count(entry)) {
      add(entry);
    }
  }
  // trace_marker writes: not in available_events (the ftrace group has no
  // enable file; FtraceSettings knows it as always on).
  add("ftrace/print");
  return events;
}

}  // namespace sluice
