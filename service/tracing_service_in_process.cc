// TracingService: the in-process producer and consumer objects, and producer
// admission (shared by in-process and IPC producers).
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <future>
#include <utility>

#include "perfetto/common/trace_stats.pb.h"
#include "service/producer_shm.h"
#include "service/tracing_service.h"
#include "shm/base/wake_fd.h"

namespace sluice {

// ---- Producer ---------------------------------------------------------------------

class TracingService::InProcessProducer : public ProducerEndpoint, public CommitDataSink {
 public:
  InProcessProducer(TracingService* service, ProducerId id, uint8_t* start, uint32_t size,
                    uint32_t page_size)
      : service_(service), id_(id), start_(start), size_(size), page_size_(page_size) {}
  ~InProcessProducer() override { service_->DisconnectProducer(id_); }

  uint8_t* shm_start() const override { return start_; }
  uint32_t shm_size() const override { return size_; }
  uint32_t shm_page_size() const override { return page_size_; }
  CommitDataSink* commit_data_sink() override { return this; }

  void RegisterDataSource(const DataSourceDescriptor& d) override {
    service_->RegisterDataSource(id_, d);
  }
  void UnregisterDataSource(const std::string& name) override {
    service_->UnregisterDataSource(id_, name);
  }
  void NotifyDataSourceStarted(DataSourceInstanceId id) override {
    service_->NotifyDataSourceStarted(id_, id);
  }
  void NotifyDataSourceStopped(DataSourceInstanceId id) override {
    service_->NotifyDataSourceStopped(id_, id);
  }
  void NotifyFlushComplete(FlushRequestId id) override { service_->NotifyFlushComplete(id_, id); }
  void ActivateTriggers(const std::vector<std::string>& names) override {
    service_->ActivateTriggers(id_, names);
  }
  void CommitCopiedChunks(const std::vector<CopiedChunk>& chunks, const std::vector<LostChunks>& lost,
                          const CommitDataRequest& request) override {
    service_->CommitCopiedChunks(id_, chunks, lost, request);
  }

  // CommitDataSink.
  void CommitData(const CommitDataRequest& request) override { service_->CommitData(id_, request); }
  void RegisterTraceWriter(uint16_t writer_id, uint32_t target_buffer) override {
    service_->RegisterTraceWriter(id_, writer_id, target_buffer);
  }
  void UnregisterTraceWriter(uint16_t writer_id) override {
    service_->UnregisterTraceWriter(id_, writer_id);
  }

 private:
  TracingService* const service_;
  const ProducerId id_;
  uint8_t* const start_;
  const uint32_t size_;
  const uint32_t page_size_;
};

StatusOr<std::unique_ptr<ProducerEndpoint>> TracingService::ConnectProducer(
    Producer* endpoint, const ProducerOptions& options, const PeerCredentials& peer,
    int* shm_fd) {
  ServiceLock lock(this);
  const auto& allow = options_.producer_uid_allowlist;
  if (options.machine_id == 0 && !allow.empty() &&
      std::find(allow.begin(), allow.end(), peer.uid) == allow.end()) {
    stats_.producers_refused++;
    Log("sluiced: refused producer '" + options.name + "' (pid " + std::to_string(peer.pid) +
        ", uid " + std::to_string(peer.uid) + "): uid not in the producer allowlist");
    return Status::Error("uid " + std::to_string(peer.uid) +
                         " may not connect as a producer (sluiced --producer-uid-allowlist)");
  }
  if (producers_.size() >= options_.max_producers) {
    stats_.producers_refused++;
    return Status::Error("sluiced has " + std::to_string(producers_.size()) +
                         " producers connected, its limit; retry later");
  }
  ProducerId id = AllocateProducerIdLocked();
  if (id == 0) {
    stats_.producers_refused++;
    return Status::Error("no free producer id; retry after sessions end");
  }

  uint32_t page = 0;
  const ProducerShmLimits limits{options_.default_shm_size_bytes, options_.min_shm_size_bytes,
                                 options_.max_shm_size_bytes, options_.default_shm_page_size_bytes};
  StatusOr<std::unique_ptr<SharedMemory>> shm = MakeProducerShm(options, limits, &page);
  if (!shm.ok() && options.producer_shm_fd >= 0) stats_.producers_refused++;
  if (!shm.ok()) return shm.status();
  const uint32_t size = shm.value()->size();

  auto p = std::make_unique<ConnectedProducer>();
  p->id = id;
  p->name = options.name.substr(0, 256);
  p->uid = peer.uid;
  p->pid = peer.pid;
  p->in_this_process = peer.pid == getpid();
  p->endpoint = endpoint;
  p->machine_id = options.machine_id;
  p->shm = std::move(shm.value());
  p->abi = SharedMemoryAbi(p->shm->start(), p->shm->size(), page);
  *shm_fd = options.producer_shm_fd >= 0 ? -1 : p->shm->fd();
  auto connection = std::make_unique<InProcessProducer>(this, id, p->shm->start(), p->shm->size(), page);
  Log("sluiced: producer " + std::to_string(id) + " '" + p->name + "' connected (pid " +
      std::to_string(p->pid) + ", uid " + std::to_string(p->uid) + ", smb " +
      std::to_string(size >> 10) + " KiB" +
      (options.producer_shm_fd >= 0 ? " of its own" : "") + ", page " +
      std::to_string(page >> 10) + " KiB)");
  producers_[id] = std::move(p);
  stats_.producers_seen++;
  stats_.producers_connected = producers_.size();
  return std::unique_ptr<ProducerEndpoint>(std::move(connection));
}

// ---- Consumer ---------------------------------------------------------------------

class TracingService::InProcessConsumer : public ConsumerEndpoint, public Consumer {
 public:
  // Flush timeouts are at most a few minutes in practice; this is the
  // backstop for a service going away.
  static constexpr uint32_t kCloneWaitMs = 10 * 60 * 1000;

  explicit InProcessConsumer(TracingService* service) : service_(service) {
    PeerCredentials self;
    self.uid = getuid();
    self.gid = getgid();
    self.pid = getpid();
    id_ = service_->AddConsumer(this, self);
  }
  ~InProcessConsumer() override { service_->RemoveConsumer(id_); }

  Status EnableTracing(const perfetto::protos::TraceConfig& config, int output_fd,
                       const SessionOptions& options) override {
    ScopedFd fd;
    if (output_fd >= 0) {
      fd.reset(fcntl(output_fd, F_DUPFD_CLOEXEC, 0));
      if (!fd.valid()) return Status::Error("cannot dup the output fd");
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      disabled_ = false;
      error_.clear();
    }
    return service_->EnableTracing(id_, config, std::move(fd), options);
  }
  Status StartTracing() override { return service_->StartTracing(id_); }

  StatusOr<bool> Flush(uint32_t timeout_ms) override {
    if (service_->loop()->RunsTasksOnCurrentThread())
      return Status::Error("ConsumerEndpoint::Flush called on the service thread (would deadlock)");
    auto promise = std::make_shared<std::promise<bool>>();
    std::future<bool> result = promise->get_future();
    service_->Flush(id_, timeout_ms, [promise](bool ok) { promise->set_value(ok); });
    // The service always answers (timeout or acks); the margin only guards
    // against a service that is being torn down.
    uint32_t wait_ms = (timeout_ms ? timeout_ms : 60000) + 10000;
    if (result.wait_for(std::chrono::milliseconds(wait_ms)) != std::future_status::ready)
      return Status::Error("the service did not answer the flush");
    return result.get();
  }

  Status DisableTracing() override { return service_->DisableTracing(id_); }

  bool WaitForTracingDisabled(uint32_t timeout_ms, std::string* error) override {
    using Clock = std::chrono::steady_clock;
    const auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
    for (;;) {
      {
        std::lock_guard<std::mutex> lock(mu_);
        if (disabled_ || !clone_triggers_.empty() || !finished_files_.empty()) {
          if (disabled_ && error) *error = error_;
          return disabled_;
        }
      }
      int left = -1;
      if (timeout_ms != kWaitForever) {
        left = static_cast<int>(std::max<int64_t>(
            0, std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count()));
        if (left == 0) return false;
      }
      // Without an eventfd (none left): look again every 100 ms.
      if (events_.fd() < 0) left = left < 0 ? 100 : std::min(left, 100);
      if (events_.WaitWith(interrupt_fd_.load(std::memory_order_relaxed), left) == WakeFd::WaitResult::kOther)
        return false;
    }
  }
  void SetWaitInterruptFd(int fd) override { interrupt_fd_.store(fd, std::memory_order_relaxed); }
  std::vector<std::string> TakeCloneTriggers() override {
    std::lock_guard<std::mutex> lock(mu_);
    return std::exchange(clone_triggers_, {});
  }
  std::vector<std::string> TakeFinishedFiles() override {
    std::lock_guard<std::mutex> lock(mu_);
    return std::exchange(finished_files_, {});
  }

  Status ReadBuffers(const std::function<void(std::string_view)>& on_packet) override {
    // In slices: the service mutex is free between them.
    bool more = true;
    while (more) {
      std::vector<std::string> packets;
      SLUICE_RETURN_IF_ERROR(service_->ReadBuffers(id_, &packets, &more));
      for (const std::string& p : packets) on_packet(p);
    }
    return Status::Ok();
  }

  StatusOr<perfetto::protos::TraceStats> GetTraceStats() override {
    return service_->GetTraceStats(id_);
  }
  Status FreeBuffers() override { return service_->FreeBuffers(id_); }
  StatusOr<ServiceState> QueryServiceState() override { return service_->QueryServiceState(); }

  Status Detach(const std::string& key) override { return service_->Detach(id_, key); }
  StatusOr<AttachedSession> Attach(const std::string& key) override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      disabled_ = false;
      error_.clear();
    }
    return service_->Attach(id_, key);
  }
  StatusOr<SessionList> ListSessions() override { return service_->ListSessions(id_); }
  StatusOr<CloneResult> CloneSession(const std::string& key) override {
    if (service_->loop()->RunsTasksOnCurrentThread())
      return Status::Error("ConsumerEndpoint::CloneSession called on the service thread (would deadlock)");
    auto promise = std::make_shared<std::promise<StatusOr<CloneResult>>>();
    std::future<StatusOr<CloneResult>> result = promise->get_future();
    service_->CloneSession(id_, key, [promise](StatusOr<CloneResult> r) { promise->set_value(std::move(r)); });
    // The service always answers (after the flush, which has its timeout);
    // the margin only guards against a service being torn down.
    if (result.wait_for(std::chrono::milliseconds(kCloneWaitMs)) != std::future_status::ready)
      return Status::Error("the service did not answer the clone");
    return result.get();
  }

  void OnTracingDisabled(const std::string& error) override {
    std::lock_guard<std::mutex> lock(mu_);
    disabled_ = true;
    error_ = error;
    events_.Wake();
  }
  void OnCloneTriggerHit(const std::string& trigger_name) override {
    std::lock_guard<std::mutex> lock(mu_);
    clone_triggers_.push_back(trigger_name);
    events_.Wake();
  }
  void OnTraceFileFinished(const std::string& name) override {
    std::lock_guard<std::mutex> lock(mu_);
    finished_files_.push_back(name);
    events_.Wake();
  }

 private:
  TracingService* const service_;
  ConsumerId id_ = 0;
  std::mutex mu_;
  // Set after disabled_, clone_triggers_ or finished_files_ changed (under mu_, which
  // WaitForTracingDisabled takes before it looks): an eventfd rather than a
  // condition variable, so that the wait can include interrupt_fd_.
  WakeFd events_ = WakeFd::Create().value_or(WakeFd());
  std::atomic<int> interrupt_fd_{-1};  // SetWaitInterruptFd().
  bool disabled_ = false;
  std::string error_;
  std::vector<std::string> clone_triggers_;  // TakeCloneTriggers.
  std::vector<std::string> finished_files_;  // TakeFinishedFiles.
};

std::unique_ptr<ConsumerEndpoint> TracingService::ConnectConsumer() {
  return std::make_unique<InProcessConsumer>(this);
}

}  // namespace sluice
