#include "user/probes/probes_producer.h"

#include <pthread.h>

#include <algorithm>
#include <cstdio>
#include <optional>

#include "perfetto/config/data_source_config.pb.h"
#include "shm/base/string_util.h"
#include "shm/base/units.h"
#include "sluice/bpf_config.pb.h"
#include "user/probes/system_info/system_info_data_source.h"
#include "user/probes/tracefs_cleanup.h"

namespace sluice {

StatusOr<uint32_t> ParseProbesSmbKb(std::string_view text) {
  SLUICE_ASSIGN_OR_RETURN(uint64_t kb, ParseSizeKb(text));
  if (kb > kMaxProbesSmbKb)
    return Status::Error("size '" + std::string(text) + "' is too large for the SMB (at most 1gb)");
  return static_cast<uint32_t>(kb);
}

ProducerOptions ProbesConnectionOptions(uint32_t smb_kb) {
  ProducerOptions options;
  options.name = "sluice-probes";
  options.shm_size_hint_bytes = smb_kb * 1024;
  options.shm_page_size_hint_bytes = 32 * 1024;
  return options;
}

const std::vector<std::string>& ProbesProducer::DataSourceNames() {
  static const std::vector<std::string> names = {"linux.ftrace", "linux.bpf",
                                                 "linux.process_stats", "linux.system_info"};
  return names;
}

ProbesProducer::ProbesProducer(ProbesProducerOptions options) : options_(std::move(options)) {
  task_thread_ = std::thread([this] {
    pthread_setname_np(pthread_self(), "probes-tasks");
    RunTasks();
  });
}

ProbesProducer::~ProbesProducer() {
  Disconnect();
  {
    std::lock_guard<std::mutex> lock(tasks_mutex_);
    stopping_ = true;
  }
  tasks_cv_.notify_all();
  task_thread_.join();
}

void ProbesProducer::Warn(const std::string& message) {
  if (options_.warn) options_.warn(message);
  else fprintf(stderr, "sluice-probes: %s\n", message.c_str());
}

void ProbesProducer::Connect(ProducerEndpoint* connection) {
  if (options_.restore_tracefs_on_connect && !options_.tracefs_state_dir.empty()) {
    TracefsCleanupReport cleanup = RestoreTracefsLeftByDeadOwners(options_.tracefs_state_dir);
    for (const auto* lines : {&cleanup.restored, &cleanup.deferred, &cleanup.errors}) {
      for (const std::string& line : *lines) Warn(line);
    }
  }
  connection_ = connection;
  service_gone_.store(false, std::memory_order_relaxed);
  std::lock_guard<std::mutex> lock(arbiter_mutex_);
  arbiter_ = std::make_unique<SharedMemoryArbiter>(connection->shm_start(), connection->shm_size(),
                                                   connection->shm_page_size(),
                                                   connection->commit_data_sink());
  for (const std::string& name : DataSourceNames()) {
    DataSourceDescriptor d;
    d.name = name;
    d.will_notify_on_start = true;
    d.will_notify_on_stop = true;
    // Asked at a rotation's cut (`sluice record --rotate`) and at
    // incremental_state_config's period, these write their state again, so
    // the next file has the process tree and system info of its own.
    d.handles_incremental_state_clear =
        name == "linux.process_stats" || name == "linux.system_info" || name == "linux.ftrace";
    connection->RegisterDataSource(d);
  }
}

void ProbesProducer::Disconnect() {
  if (!connection_) return;
  // Stop what still runs, on the task thread, and wait for it.
  std::mutex done_mutex;
  std::condition_variable done_cv;
  bool done = false;
  Post([&] {
    std::vector<DataSourceInstanceId> ids;
    {
      std::lock_guard<std::mutex> lock(instances_mutex_);
      for (auto& [id, inst] : instances_) ids.push_back(id);
    }
    for (DataSourceInstanceId id : ids) StopOnTaskThread(id);
    std::lock_guard<std::mutex> lock(done_mutex);
    done = true;
    done_cv.notify_all();
  });
  {
    std::unique_lock<std::mutex> lock(done_mutex);
    done_cv.wait(lock, [&] { return done; });
  }
  {
    std::lock_guard<std::mutex> lock(arbiter_mutex_);
    arbiter_.reset();
  }
  connection_ = nullptr;
}

void ProbesProducer::Post(std::function<void()> task) {
  {
    std::lock_guard<std::mutex> lock(tasks_mutex_);
    tasks_.push_back(std::move(task));
  }
  tasks_cv_.notify_all();
}

void ProbesProducer::PostFirst(std::function<void()> task) {
  {
    std::lock_guard<std::mutex> lock(tasks_mutex_);
    tasks_.push_front(std::move(task));
  }
  tasks_cv_.notify_all();
}

void ProbesProducer::RunTasks() {
  std::unique_lock<std::mutex> lock(tasks_mutex_);
  for (;;) {
    tasks_cv_.wait(lock, [this] { return stopping_ || !tasks_.empty(); });
    if (tasks_.empty()) return;  // stopping_
    auto task = std::move(tasks_.front());
    tasks_.pop_front();
    lock.unlock();
    task();
    lock.lock();
  }
}

void ProbesProducer::SetupDataSource(DataSourceInstanceId, const perfetto::protos::DataSourceConfig&) {
  // Everything happens at start: setting up ftrace changes tracefs.
}

void ProbesProducer::StartDataSource(DataSourceInstanceId id,
                                     const perfetto::protos::DataSourceConfig& config) {
  Post([this, id, config] { StartOnTaskThread(id, config); });
}

void ProbesProducer::StartOnTaskThread(DataSourceInstanceId id,
                                       const perfetto::protos::DataSourceConfig& config) {
  if (!arbiter_ || service_gone_.load(std::memory_order_relaxed)) return;
  const uint32_t target_buffer = config.target_buffer();
  SharedMemoryArbiter* arbiter = arbiter_.get();
  BufferExhaustedPolicy policy = options_.buffer_exhausted_policy;
  auto make_writer = [arbiter, target_buffer, policy] {
    return arbiter->CreateTraceWriter(target_buffer, policy);
  };
  Instance inst;
  inst.name = config.name();
  Status status;
  if (config.name() == "linux.ftrace") {
    FtraceDataSourceOptions ftrace_options = options_.ftrace;
    ftrace_options.tracefs_state_dir = options_.tracefs_state_dir;
    auto ds = FtraceDataSource::Create(config.ftrace_config(), make_writer, ftrace_options);
    if (ds.ok()) {
      status = (*ds)->Start();
      if (status.ok()) inst.ftrace = std::move(ds.value());
    } else {
      status = ds.status();
    }
  } else if (config.name() == "linux.bpf") {
    auto ds = BpfDataSource::Create(config.bpf_config(), make_writer, options_.bpf);
    if (ds.ok()) {
      status = (*ds)->Start();
      if (status.ok()) inst.bpf = std::move(ds.value());
    } else {
      status = ds.status();
    }
  } else if (config.name() == "linux.process_stats") {
    inst.process_stats =
        std::make_unique<ProcessStatsDataSource>(config.process_stats_config(), make_writer());
    inst.process_stats->Start();
  } else if (config.name() == "linux.system_info") {
    inst.system_info = make_writer();
    inst.system_info_irq_names = config.system_info_config().irq_names();
    std::string warning = WriteSystemInfoPacket(inst.system_info.get(), inst.system_info_irq_names);
    if (!warning.empty()) Warn(warning);
    inst.system_info->Flush();
  } else {
    status = Status::Error("data source '" + config.name() + "' is not hosted by sluice-probes");
  }
  if (!status.ok()) {
    std::string line = config.name() + ": " + status.message();
    Warn(line);
    std::lock_guard<std::mutex> lock(instances_mutex_);
    start_errors_.push_back(line);
  } else {
    std::lock_guard<std::mutex> lock(instances_mutex_);
    instances_[id] = std::move(inst);
  }
  // Started (or failed): the service must not wait for it either way.
  if (connection_) connection_->NotifyDataSourceStarted(id);
  if (options_.on_data_source_started) options_.on_data_source_started();
}

void ProbesProducer::StopDataSource(DataSourceInstanceId id) {
  Post([this, id] {
    StopOnTaskThread(id);
    if (connection_) connection_->NotifyDataSourceStopped(id);
  });
}

void ProbesProducer::StopOnTaskThread(DataSourceInstanceId id) {
  Instance inst;
  {
    std::lock_guard<std::mutex> lock(instances_mutex_);
    auto it = instances_.find(id);
    if (it == instances_.end()) return;
    inst = std::move(it->second);
    instances_.erase(it);
  }
  if (inst.ftrace) inst.ftrace->Stop();
  if (inst.bpf) inst.bpf->Stop();
  if (inst.process_stats) inst.process_stats->Stop();
  {
    std::lock_guard<std::mutex> lock(instances_mutex_);
    AddCounters(inst, &retired_counters_);
  }
  // Destroying the data sources destroys their writers: their chunks and
  // unregistrations are committed now.
  inst = Instance{};
  if (arbiter_) arbiter_->FlushPendingCommitData();
}

void ProbesProducer::Flush(FlushRequestId flush_id,
                           const std::vector<DataSourceInstanceId>& ids) {
  Post([this, flush_id, ids] {
    // The data sources' commits and the acknowledgement go to the service as
    // one CommitData carrying the flush id, at the batch's end (a message
    // each woke the service five times a round).
    std::optional<SharedMemoryArbiter::FlushBatch> batch;
    if (arbiter_) batch.emplace(arbiter_.get(), flush_id);
    for (DataSourceInstanceId id : ids) {
      std::unique_lock<std::mutex> lock(instances_mutex_);
      auto it = instances_.find(id);
      if (it == instances_.end()) continue;
      Instance* inst = &it->second;
      lock.unlock();  // Only this thread erases instances.
      if (inst->ftrace) inst->ftrace->Flush();
      if (inst->bpf) inst->bpf->Flush();
      if (inst->process_stats) inst->process_stats->Flush();
    }
    if (!batch && connection_) connection_->NotifyFlushComplete(flush_id);
  });
}

void ProbesProducer::ClearIncrementalState(const std::vector<DataSourceInstanceId>& ids) {
  // No packet here depends on an earlier one (compact_sched interns per
  // bundle), so there is nothing to forget; but the process tree, the
  // system info and the kernel's ftrace counters are written again, for a
  // trace file cut here (a rotation) to have them.
  Post([this, ids] {
    for (DataSourceInstanceId id : ids) {
      Instance* inst = nullptr;
      {
        std::lock_guard<std::mutex> lock(instances_mutex_);
        auto it = instances_.find(id);
        if (it != instances_.end()) inst = &it->second;
      }
      // Only this thread erases instances: `inst` stays valid unlocked.
      if (!inst) continue;
      if (inst->ftrace) inst->ftrace->WriteStatsForCut();
      if (inst->process_stats) inst->process_stats->WriteAllAgain();
      if (inst->system_info) {
        WriteSystemInfoPacket(inst->system_info.get(), inst->system_info_irq_names);
        inst->system_info->Flush();
      }
    }
  });
}

void ProbesProducer::OnDisconnect(const std::string& reason) {
  const auto noticed = std::chrono::steady_clock::now();
  service_gone_.store(true, std::memory_order_relaxed);
  {
    std::lock_guard<std::mutex> lock(arbiter_mutex_);
    if (arbiter_) arbiter_->MarkServiceGone();
  }
  Warn("disconnected by the service: " + reason);
  PostFirst([this, reason, noticed] { AbandonOnTaskThread(reason, noticed); });
}

void ProbesProducer::AbandonOnTaskThread(const std::string& reason,
                                         std::chrono::steady_clock::time_point noticed) {
  std::vector<Instance> abandoned;
  {
    std::lock_guard<std::mutex> lock(instances_mutex_);
    for (auto& [id, inst] : instances_) abandoned.push_back(std::move(inst));
    instances_.clear();
  }
  const size_t abandoned_count = abandoned.size();
  if (abandoned_count == 0) return;
  // tracefs first: it is what other tracers on this machine share.
  FtraceAbandonStats lost;
  std::vector<std::string> restored;
  for (Instance& inst : abandoned) {
    if (!inst.ftrace) continue;
    FtraceAbandonStats l = inst.ftrace->Abandon();
    lost.kernel_unread_events += l.kernel_unread_events;
    restored.push_back(inst.ftrace->settings()->restore_report().Summary());
  }
  const auto restored_at = std::chrono::steady_clock::now();
  for (Instance& inst : abandoned) {
    if (inst.bpf) inst.bpf->Stop();
    if (inst.process_stats) inst.process_stats->Stop();
    std::lock_guard<std::mutex> lock(instances_mutex_);
    AddCounters(inst, &retired_counters_);
  }
  abandoned.clear();
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(restored_at - noticed);
  std::string line = "the service is gone (" + reason + "): stopped " +
                     std::to_string(abandoned_count) + " data source" +
                     (abandoned_count == 1 ? "" : "s");
  if (!restored.empty()) {
    line += "; tracefs restored " + std::to_string(ms.count()) + " ms after noticing (" +
            Join(restored, "; ") + "); not delivered: " +
            std::to_string(lost.kernel_unread_events) + " events left in the kernel buffer";
  }
  Warn(line);
}

void ProbesProducer::AddCounters(const Instance& inst, ProbesStats* c) {
  if (inst.ftrace) {
    FtraceSourceStats f = inst.ftrace->stats();
    c->ftrace_events += f.events;
    c->ftrace_lost_event_pages += f.lost_event_pages;
    c->ftrace_parse_errors += f.parse_errors;
    c->ftrace_smb_full_waits += f.smb_full_waits;
  }
  if (inst.bpf) {
    BpfSourceStats b = inst.bpf->stats();
    c->bpf_events += b.total.delivered;
    c->bpf_dropped += b.total.dropped;
    c->bpf_smb_full_waits += b.smb_full_waits;
  }
}

ProbesStats ProbesProducer::stats() const {
  std::lock_guard<std::mutex> lock(instances_mutex_);
  ProbesStats c = retired_counters_;
  for (const auto& [id, inst] : instances_) AddCounters(inst, &c);
  return c;
}

std::vector<std::string> ProbesProducer::start_errors() const {
  std::lock_guard<std::mutex> lock(instances_mutex_);
  return start_errors_;
}

size_t ProbesProducer::running_instances() const {
  std::lock_guard<std::mutex> lock(instances_mutex_);
  return instances_.size();
}

}  // namespace sluice
