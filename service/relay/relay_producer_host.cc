#include "service/relay/relay_producer_host.h"

#include <unistd.h>

#include <algorithm>
#include <utility>
#include <cstring>

#include "perfetto/config/data_source_config.pb.h"
#include "service/ipc/ipc_producer_protocol.h"
#include "service/producer_shm.h"
#include "service/relay/relay_clock_sync.h"
#include "shm/shared_memory.h"
#include "shm/shm_abi.h"
#include "shm/smb_chunk_reader.h"
#include "sluice/relay.pb.h"

namespace sluice {
namespace {

constexpr uint32_t kRelayProtocolVersion = 1;
constexpr uint32_t kMaxReconnectMs = 5000;
// A commit's chunks go in frames of about this much (the host takes 4 MiB).
constexpr size_t kFrameChunkBytes = 1u << 20;
constexpr size_t kDroppedChunksRemembered = 4096;
// More than any transport holds written but unread (socket buffers, a
// virtio-serial port's queue): what the host may not have read of a link.
constexpr uint64_t kUnreadBytesBound = 16u << 20;

std::string HostName() {
  char buf[256] = {};
  if (gethostname(buf, sizeof(buf) - 1) != 0 || !buf[0]) return "guest";
  return buf;
}

}  // namespace

// One guest producer: its SMB, what it registered, what the host started.
class RelayProducerHost::GuestProducer : public ProducerEndpoint, public CommitDataSink {
 public:
  GuestProducer(RelayProducerHost* host, uint32_t slot, Producer* producer, std::string name,
                PeerCredentials peer, std::unique_ptr<SharedMemory> shm, uint32_t page)
      : host(host),
        slot(slot),
        producer(producer),
        name(std::move(name)),
        peer(std::move(peer)),
        shm(std::move(shm)),
        abi(this->shm->start(), this->shm->size(), page) {}
  ~GuestProducer() override { host->ProducerGone(this); }

  uint8_t* shm_start() const override { return shm->start(); }
  uint32_t shm_size() const override { return shm->size(); }
  uint32_t shm_page_size() const override { return abi.page_size(); }
  CommitDataSink* commit_data_sink() override { return this; }

  void RegisterDataSource(const DataSourceDescriptor& d) override {
    data_sources.push_back(d);
    protos::RelayFrame f = Frame();
    auto* r = f.mutable_to_service()->mutable_register_data_source();
    r->set_name(d.name);
    r->set_will_notify_on_start(d.will_notify_on_start);
    r->set_will_notify_on_stop(d.will_notify_on_stop);
    r->set_handles_incremental_state_clear(d.handles_incremental_state_clear);
    host->SendFor(this, f);
  }
  void UnregisterDataSource(const std::string& ds) override {
    data_sources.erase(std::remove_if(data_sources.begin(), data_sources.end(),
                                      [&](const DataSourceDescriptor& d) { return d.name == ds; }),
                       data_sources.end());
    protos::RelayFrame f = Frame();
    f.mutable_to_service()->mutable_unregister_data_source()->set_name(ds);
    host->SendFor(this, f);
  }
  void NotifyDataSourceStarted(DataSourceInstanceId id) override {
    protos::RelayFrame f = Frame();
    f.mutable_to_service()->mutable_data_source_started()->set_data_source_id(id);
    host->SendFor(this, f);
  }
  void NotifyDataSourceStopped(DataSourceInstanceId id) override {
    instances.erase(id);
    protos::RelayFrame f = Frame();
    f.mutable_to_service()->mutable_data_source_stopped()->set_data_source_id(id);
    host->SendFor(this, f);
  }
  void NotifyFlushComplete(FlushRequestId id) override {
    host->SendLosses();  // The host counts them before the flush ends.
    protos::RelayFrame f = Frame();
    f.mutable_to_service()->mutable_notify_flush_complete()->set_flush_request_id(id);
    host->SendFor(this, f);
  }
  void ActivateTriggers(const std::vector<std::string>& names) override {
    protos::RelayFrame f = Frame();
    for (const auto& n : names) f.mutable_to_service()->mutable_activate_triggers()->add_trigger_names(n);
    host->SendFor(this, f);
  }

  void CommitData(const CommitDataRequest& request) override { host->ForwardCommit(this, request); }
  void RegisterTraceWriter(uint16_t writer_id, uint32_t target_buffer) override {
    writers[writer_id] = target_buffer;
    protos::RelayFrame f = Frame();
    f.mutable_trace_writer()->set_writer_id(writer_id);
    f.mutable_trace_writer()->set_target_buffer(target_buffer);
    host->SendFor(this, f);
  }
  void UnregisterTraceWriter(uint16_t writer_id) override {
    writers.erase(writer_id);
    protos::RelayFrame f = Frame();
    f.mutable_trace_writer()->set_writer_id(writer_id);
    f.mutable_trace_writer()->set_target_buffer(0);
    host->SendFor(this, f);
  }

  protos::RelayFrame Frame() const {
    protos::RelayFrame f;
    f.set_producer(slot);
    return f;
  }

  RelayProducerHost* const host;
  const uint32_t slot;
  Producer* const producer;
  const std::string name;
  const PeerCredentials peer;
  std::unique_ptr<SharedMemory> shm;
  SharedMemoryAbi abi;
  std::vector<DataSourceDescriptor> data_sources;
  std::map<uint16_t, uint32_t> writers;  // Writer id -> target buffer.
  // Instances the host set up on the current link, and the buffers their
  // configs named: the only ones this producer's chunks may go to.
  std::set<DataSourceInstanceId> instances;
  std::set<uint32_t> targets;
  bool announced = false;  // producer_connected sent on the current link.
  bool dropped_by_host = false;
};

RelayProducerHost::RelayProducerHost(EventLoop* loop, RelayOptions options)
    : loop_(loop), options_(std::move(options)), scratch_(new uint8_t[kMaxPageSize]) {
  if (options_.machine_name.empty()) options_.machine_name = HostName();
}

RelayProducerHost::~RelayProducerHost() {
  *alive_ = false;
  if (reconnect_timer_) loop_->CancelDelayedTask(reconnect_timer_);
  if (sync_timer_) loop_->CancelDelayedTask(sync_timer_);
  if (losses_timer_) loop_->CancelDelayedTask(losses_timer_);
  link_.reset();
}

void RelayProducerHost::LogLine(const std::string& line) const {
  if (options_.log) options_.log(line);
}

void RelayProducerHost::CountProducerNotReading(Producer*, const std::string& why) {
  LogLine("sluice-relay: dropped a producer that does not read its socket: " + why);
}

void RelayProducerHost::Start() { Connect(); }

void RelayProducerHost::Connect() {
  reconnect_timer_ = 0;
  auto fd = OpenRelayAddress(options_.to);
  if (!fd.ok()) {
    if (!logged_connect_failure_)
      LogLine("sluice-relay: cannot reach the host yet (" + fd.status().message() +
              "); retrying");
    logged_connect_failure_ = true;
    ScheduleReconnect();
    return;
  }
  RelayLink::Options o;
  o.max_queued_bytes = options_.buffer_bytes + (8u << 20);  // Room for control frames.
  o.max_bytes_per_second = options_.max_bytes_per_second;
  link_ = std::make_unique<RelayLink>(
      loop_, std::move(fd.value()), o, [this](const protos::RelayFrame& f) { OnFrame(f); },
      [this](const std::string& reason, std::string_view) { OnLinkClosed(reason); });
  link_->Start();
  protos::RelayFrame hello;
  hello.mutable_hello()->set_protocol_version(kRelayProtocolVersion);
  hello.mutable_hello()->set_machine_name(options_.machine_name);
  link_->Send(hello);
}

void RelayProducerHost::ScheduleReconnect() {
  reconnect_delay_ms_ = reconnect_delay_ms_ ? std::min(reconnect_delay_ms_ * 2, kMaxReconnectMs)
                                            : options_.reconnect_ms;
  std::weak_ptr<bool> alive = alive_;
  reconnect_timer_ = loop_->PostDelayedTask(
      [this, alive] {
        auto a = alive.lock();
        if (a && *a) Connect();
      },
      reconnect_delay_ms_);
}

void RelayProducerHost::OnLinkClosed(const std::string& reason) {
  const bool was_welcomed = machine_id_ != 0;
  LogLine("sluice-relay: link to " + options_.to.ToString() + " closed: " + reason);
  // What the host did not get of this link is counted once the next
  // welcome says how much it got (written here is not read there).
  unconfirmed_commits_ = std::move(queued_commits_);
  queued_commits_.clear();
  // Deleted in a task of its own: this runs from the link's callback.
  std::shared_ptr<RelayLink> dead(link_.release());
  loop_->PostTask([dead] {});
  machine_id_ = 0;
  announced_ = false;
  burst_rounds_left_ = 0;
  if (sync_timer_) loop_->CancelDelayedTask(sync_timer_);
  sync_timer_ = 0;
  // What the host started has nowhere to go now; it starts them again once
  // the link is back, for the sessions still running.
  for (auto& [slot, p] : producers_) {
    p->announced = false;
    p->targets.clear();
    std::set<DataSourceInstanceId> ids = std::move(p->instances);
    p->instances.clear();
    for (DataSourceInstanceId id : ids) p->producer->StopDataSource(id);
  }
  if (was_welcomed) reconnect_delay_ms_ = 0;
  ScheduleReconnect();
}

void RelayProducerHost::OnFrame(const protos::RelayFrame& f) {
  switch (f.msg_case()) {
    case protos::RelayFrame::kWelcome:
      if (f.welcome().has_error() || f.welcome().machine_id() == 0) {
        LogLine("sluice-relay: the host refused this relay: " + f.welcome().error());
        link_->Close("refused");
        return;
      }
      machine_id_ = f.welcome().machine_id();
      totals_.links++;
      // The previous link's commits past what the host read: dropped. With
      // no figure (the host restarted: its sessions are gone) all of them.
      for (const QueuedCommit& q : unconfirmed_commits_) {
        const uint64_t got = f.welcome().previous_link_bytes();
        if (q.end <= got) continue;
        if (q.start == got && f.welcome().previous_link_cut()) pending_cut_frame_ = true;
        for (const auto& [target, l] : q.chunks) {
          AddLoss(target, l.chunks, l.packets, l.bytes);
          totals_.chunks_forwarded -= l.chunks;
          totals_.bytes_forwarded -= l.bytes;
        }
      }
      unconfirmed_commits_.clear();
      logged_connect_failure_ = false;
      LogLine("sluice-relay: connected to " + options_.to.ToString() + " as machine " +
              std::to_string(machine_id_) + " '" + options_.machine_name + "'");
      StartClockBurst(kBurstRounds);
      return;
    case protos::RelayFrame::kClockSync:
      if (f.clock_sync().step() == protos::RelayClockSync::PONG) OnPong(f.clock_sync().round());
      return;
    case protos::RelayFrame::kToProducer:
      ToProducer(f);
      return;
    case protos::RelayFrame::kProducerGone: {
      auto it = producers_.find(f.producer());
      if (it == producers_.end()) return;
      it->second->dropped_by_host = true;
      it->second->producer->OnDisconnect("the host's sluiced dropped it: " +
                                         f.producer_gone().reason());
      return;
    }
    default:
      link_->Close("the host sent a frame only a relay sends");
  }
}

void RelayProducerHost::StartClockBurst(uint32_t rounds) {
  if (burst_rounds_left_ || !link_) return;  // One burst at a time.
  burst_rounds_left_ = rounds;
  SendPing();
}

void RelayProducerHost::SendPing() {
  round_++;
  protos::RelayFrame f;
  f.mutable_clock_sync()->set_round(round_);
  f.mutable_clock_sync()->set_step(protos::RelayClockSync::PING);
  t1c_ = ReadRelayClocks();
  link_->Send(f);
}

void RelayProducerHost::OnPong(uint64_t round) {
  perfetto::protos::ClockSnapshot t2c = ReadRelayClocks();
  if (round != round_ || burst_rounds_left_ == 0) return;
  burst_rounds_left_--;
  totals_.clock_rounds++;
  protos::RelayFrame f;
  auto* s = f.mutable_clock_sync();
  s->set_round(round);
  s->set_step(protos::RelayClockSync::READINGS);
  *s->mutable_client_at_ping() = t1c_;
  *s->mutable_client_at_pong() = std::move(t2c);
  s->set_last_of_burst(burst_rounds_left_ == 0);
  link_->Send(f);
  if (burst_rounds_left_) return SendPing();
  if (!announced_) {
    announced_ = true;
    for (auto& [slot, p] : producers_) Announce(p);
    SendLosses();  // What was dropped while the link was down.
  }
  SchedulePeriodicSync();
}

void RelayProducerHost::SchedulePeriodicSync() {
  if (sync_timer_ || options_.clock_sync_period_ms == 0) return;
  std::weak_ptr<bool> alive = alive_;
  sync_timer_ = loop_->PostDelayedTask(
      [this, alive] {
        auto a = alive.lock();
        if (!a || !*a) return;
        sync_timer_ = 0;
        StartClockBurst(kPeriodicRounds);
      },
      options_.clock_sync_period_ms);
}

void RelayProducerHost::Announce(GuestProducer* p) {
  if (p->dropped_by_host) return;
  protos::RelayFrame f = p->Frame();
  auto* c = f.mutable_producer_connected();
  c->set_name(p->name);
  c->set_uid(static_cast<int32_t>(p->peer.uid));
  c->set_pid(p->peer.pid);
  link_->Send(f);
  p->announced = true;
  // What it registered before this link: data sources, then writers.
  std::vector<DataSourceDescriptor> sources = p->data_sources;
  p->data_sources.clear();
  for (const DataSourceDescriptor& d : sources) p->RegisterDataSource(d);
  for (const auto& [writer, target] : std::map<uint16_t, uint32_t>(p->writers))
    p->RegisterTraceWriter(writer, target);
}

bool RelayProducerHost::SendFor(const GuestProducer* p, const protos::RelayFrame& frame) {
  if (!link_ || !announced_ || !p->announced) return false;
  return link_->Send(frame);
}

void RelayProducerHost::ToProducer(const protos::RelayFrame& f) {
  auto it = producers_.find(f.producer());
  if (it == producers_.end() || it->second->dropped_by_host) return;  // Gone meanwhile.
  GuestProducer* p = it->second;
  const protos::ServiceToProducer& m = f.to_producer();
  switch (m.msg_case()) {
    case protos::ServiceToProducer::kSetupDataSource:
      p->instances.insert(m.setup_data_source().data_source_id());
      p->targets.insert(m.setup_data_source().config().target_buffer());
      p->producer->SetupDataSource(m.setup_data_source().data_source_id(),
                                   m.setup_data_source().config());
      return;
    case protos::ServiceToProducer::kStartDataSource:
      p->instances.insert(m.start_data_source().data_source_id());
      p->targets.insert(m.start_data_source().config().target_buffer());
      p->producer->StartDataSource(m.start_data_source().data_source_id(),
                                   m.start_data_source().config());
      return;
    case protos::ServiceToProducer::kStopDataSource:
      p->producer->StopDataSource(m.stop_data_source().data_source_id());
      return;
    case protos::ServiceToProducer::kFlush:
      p->producer->Flush(m.flush().flush_request_id(),
                         std::vector<DataSourceInstanceId>(m.flush().data_source_ids().begin(),
                                                           m.flush().data_source_ids().end()));
      return;
    case protos::ServiceToProducer::kClearIncrementalState:
      p->producer->ClearIncrementalState(std::vector<DataSourceInstanceId>(
          m.clear_incremental_state().data_source_ids().begin(),
          m.clear_incremental_state().data_source_ids().end()));
      return;
    case protos::ServiceToProducer::kActivateTriggersResponse:
      p->producer->OnTriggersActivated(m.activate_triggers_response().sessions_triggered());
      return;
    default:
      link_->Close("the host sent a producer message the relay does not take");
  }
}

void RelayProducerHost::Drop(uint32_t target, uint16_t packets, size_t bytes, uint16_t writer,
                             uint32_t chunk_id) {
  AddLoss(target, 1, packets, bytes);
  const uint64_t key = (static_cast<uint64_t>(writer) << 32) | chunk_id;
  if (dropped_chunks_.insert(key).second) {
    dropped_order_.push_back(key);
    if (dropped_order_.size() > kDroppedChunksRemembered) {
      dropped_chunks_.erase(dropped_order_.front());
      dropped_order_.pop_front();
    }
  }
}

void RelayProducerHost::AddLoss(uint32_t target, uint64_t chunks, uint64_t packets, uint64_t bytes) {
  Loss& l = pending_losses_[target];
  l.chunks += chunks;
  l.packets += packets;
  l.bytes += bytes;
  totals_.chunks_dropped += chunks;
  totals_.packets_dropped += packets;
  totals_.bytes_dropped += bytes;
  if (!losses_timer_) {
    std::weak_ptr<bool> alive = alive_;
    losses_timer_ = loop_->PostDelayedTask(
        [this, alive] {
          auto a = alive.lock();
          if (!a || !*a) return;
          losses_timer_ = 0;
          SendLosses();  // With the link down they wait for the next one.
        },
        1000);
  }
}

void RelayProducerHost::SendLosses() {
  if (pending_losses_.empty() || !link_ || !announced_) return;
  protos::RelayFrame f;
  for (const auto& [target, l] : pending_losses_) {
    if (l.chunks == 0) continue;
    auto* b = f.mutable_losses()->add_buffers();
    b->set_target_buffer(target);
    b->set_chunks(l.chunks);
    b->set_packets(l.packets);
    b->set_bytes(l.bytes);
  }
  pending_losses_.clear();
  if (f.has_losses() && std::exchange(pending_cut_frame_, false))
    f.mutable_losses()->set_includes_cut_frame(true);
  if (f.has_losses()) link_->Send(f);
}

void RelayProducerHost::ForwardCommit(GuestProducer* p, const CommitDataRequest& request) {
  protos::RelayFrame f = p->Frame();
  size_t frame_bytes = 0;
  std::map<uint32_t, Loss> frame_chunks;  // What f carries, for queued_commits_.
  // Sends f, remembering its chunks until the link has written it.
  auto send = [&] {
    const uint64_t start = link_->bytes_queued();
    link_->Send(f);
    if (!frame_chunks.empty())
      queued_commits_.push_back(QueuedCommit{start, link_->bytes_queued(), std::move(frame_chunks)});
    frame_chunks.clear();
    // Written is not yet read by the host (socket and port buffers hold
    // some): a frame is forgotten once this much more was written after it.
    while (!queued_commits_.empty() &&
           queued_commits_.front().end + kUnreadBytesBound <= link_->bytes_written())
      queued_commits_.pop_front();
  };
  const bool up = link_ && announced_ && p->announced && !p->dropped_by_host;
  // The newest chunk dropped per (buffer, writer): the host stops waiting
  // for them (RelayCommit.lost).
  std::map<std::pair<uint32_t, uint16_t>, uint32_t> lost;
  for (const ChunkToMove& m : request.chunks_to_move) {
    ChunkCopy copy;
    ChunkReadResult r = ReadChunkUntrusted(&p->abi, m.page, m.chunk, scratch_.get(), kMaxPageSize, &copy);
    if (r == ChunkReadResult::kNotComplete || r == ChunkReadResult::kBadIndex) continue;
    const size_t size = sizeof(ChunkHeader) +
                        (r == ChunkReadResult::kOk ? copy.used_payload_size : copy.payload_size);
    // A chunk the host cannot take (no link, a buffer not named on this
    // link) or the queue has no room for: dropped, counted.
    if (!up || !p->targets.count(m.target_buffer) ||
        link_->queued_bytes() + frame_bytes + size > options_.buffer_bytes) {
      Drop(m.target_buffer, copy.header.packet_count(), size, copy.header.writer_id,
           copy.header.chunk_id);
      // The newest, in chunk id order (ids wrap; a commit may be out of order).
      auto [it, inserted] = lost.try_emplace({m.target_buffer, copy.header.writer_id}, copy.header.chunk_id);
      if (!inserted && static_cast<int32_t>(copy.header.chunk_id - it->second) > 0) it->second = copy.header.chunk_id;
      continue;
    }
    auto* c = f.mutable_commit()->add_chunks();
    c->set_target_buffer(m.target_buffer);
    c->set_data(scratch_.get(), size);
    frame_bytes += size;
    Loss& l = frame_chunks[m.target_buffer];
    l.chunks++;
    l.packets += copy.header.packet_count();
    l.bytes += size;
    totals_.chunks_forwarded++;
    totals_.bytes_forwarded += size;
    if (frame_bytes >= kFrameChunkBytes) {  // Keep frames well under the host's bound.
      send();
      f = p->Frame();
      frame_bytes = 0;
    }
  }
  CommitDataRequest rest;
  rest.flush_request_id = request.flush_request_id;
  for (const ChunkPatch& patch : request.chunks_to_patch) {
    const uint64_t key = (static_cast<uint64_t>(patch.writer_id) << 32) | patch.chunk_id;
    if (!dropped_chunks_.count(key)) rest.chunks_to_patch.push_back(patch);
  }
  if (rest.flush_request_id) SendLosses();
  if (!up) return;
  if (!rest.chunks_to_patch.empty() || rest.flush_request_id)
    CommitDataToProto(rest, f.mutable_commit()->mutable_commit());
  for (const auto& [key, chunk_id] : lost) {
    auto* l = f.mutable_commit()->add_lost();
    l->set_target_buffer(key.first);
    l->set_writer_id(key.second);
    l->set_last_chunk_id(chunk_id);
  }
  if (f.has_commit()) send();
}

StatusOr<std::unique_ptr<ProducerEndpoint>> RelayProducerHost::ConnectProducer(
    Producer* endpoint, const ProducerOptions& options, const PeerCredentials& peer, int* shm_fd) {
  uint32_t page = 0;
  const ProducerShmLimits limits{options_.default_shm_size_bytes, options_.min_shm_size_bytes,
                                 options_.max_shm_size_bytes, options_.default_shm_page_size_bytes};
  StatusOr<std::unique_ptr<SharedMemory>> shm = MakeProducerShm(options, limits, &page);
  if (!shm.ok()) return shm.status();
  *shm_fd = options.producer_shm_fd >= 0 ? -1 : shm.value()->fd();
  const uint32_t slot = next_slot_++;
  auto p = std::make_unique<GuestProducer>(this, slot, endpoint, options.name.substr(0, 256), peer,
                                           std::move(shm.value()), page);
  producers_[slot] = p.get();
  totals_.producers_seen++;
  LogLine("sluice-relay: producer '" + p->name + "' (pid " + std::to_string(peer.pid) + ") connected");
  if (link_ && announced_) Announce(p.get());
  return std::unique_ptr<ProducerEndpoint>(std::move(p));
}

void RelayProducerHost::ProducerGone(GuestProducer* p) {
  // Its Complete chunks not committed yet (it died, or closed without a
  // last flush), as sluiced scrapes an SMB: sent if the link takes them.
  // Only pages ever written can hold one; reading the others would
  // allocate them.
  CommitDataRequest scrape;
  const SharedMemoryAbi& abi = p->abi;
  for (uint32_t page : p->shm->PagesEverWritten(abi.page_size(), abi.num_pages())) {
    uint32_t header = abi.page_header(page)->header_bitmap.load(std::memory_order_acquire);
    PageLayout layout = SharedMemoryAbi::LayoutOf(header);
    for (uint32_t c = 0; c < SharedMemoryAbi::NumChunksOf(header); c++) {
      if (SharedMemoryAbi::StateOf(header, c) != ChunkState::kComplete) continue;
      ChunkHeader peek;
      memcpy(&peek, abi.chunk_begin(page, layout, c), sizeof(peek));
      auto w = p->writers.find(peek.writer_id);
      if (w != p->writers.end()) scrape.chunks_to_move.push_back(ChunkToMove{page, c, w->second});
    }
  }
  if (!scrape.chunks_to_move.empty()) ForwardCommit(p, scrape);
  protos::RelayFrame f = p->Frame();
  f.mutable_producer_gone()->set_reason("its connection to the relay closed");
  SendFor(p, f);
  producers_.erase(p->slot);
}

}  // namespace sluice
