#include "service/relay/relay_server.h"

#include <fcntl.h>
#include <sys/epoll.h>

#include <utility>
#include <vector>

#include "perfetto/config/data_source_config.pb.h"
#include "service/ipc/ipc_frame.h"
#include "service/ipc/ipc_producer_protocol.h"
#include "service/relay/relay_clock_sync.h"
#include "service/tracing_service.h"
#include "sluice/relay.pb.h"

namespace sluice {
namespace {

constexpr uint32_t kRelayProtocolVersion = 1;
// Pings waiting for their READINGS: a relay runs one round at a time.
constexpr size_t kMaxPendingPings = 16;

// Whether `bytes` (a cut frame: its u32 length, then its start) begin a
// RelayFrame carrying a commit: fields are written in number order, so the
// producer slot (1, a varint) comes first and then the message, commit (8).
bool IsCommitFrameStart(std::string_view bytes) {
  if (bytes.size() <= kFrameHeaderSize) return false;
  size_t i = kFrameHeaderSize;
  if (static_cast<uint8_t>(bytes[i]) == 0x08) {  // producer = 1, varint
    i++;
    while (i < bytes.size() && (static_cast<uint8_t>(bytes[i]) & 0x80)) i++;
    i++;
  }
  return i < bytes.size() && static_cast<uint8_t>(bytes[i]) == 0x42;  // commit = 8, bytes
}

bool ValidMachineName(const std::string& name) {
  if (name.empty() || name.size() > 64) return false;
  for (char c : name)
    if (c <= ' ' || c > '~') return false;
  return true;
}

}  // namespace

// One relay link: a machine and its producers.
class RelayServer::MachineLink {
 public:
  MachineLink(RelayServer* server, uint64_t id, ScopedFd fd)
      : server_(server),
        service_(server->service_),
        id_(id),
        link_(service_->loop(), std::move(fd), RelayLink::Options{16u << 20, 0},
              [this](const protos::RelayFrame& f) { OnFrame(f); },
              [this](const std::string& reason, std::string_view cut) { OnClosed(reason, cut); }) {}

  ~MachineLink() {
    producers_.clear();  // Disconnects them from the service first.
    if (machine_id_) service_->RelayedMachineGone(machine_id_, lost_in_transit_);
  }

  void Start() { link_.Start(); }
  const std::string& name() const { return name_; }
  uint64_t frame_bytes_received() const { return link_.frame_bytes_received(); }
  bool cut_in_commit() const { return IsCommitFrameStart(link_.partial_frame()); }
  // A newer link of the same machine took its place (and its figure).
  void Supersede() { superseded_ = true; }
  void Close(const std::string& reason) { link_.Close(reason); }
  bool Send(const protos::RelayFrame& f) { return link_.Send(f); }

 private:
  // A guest producer, as the service sees it.
  class RelayedProducer : public Producer {
   public:
    RelayedProducer(MachineLink* link, uint32_t slot) : link_(link), slot_(slot) {}
    ~RelayedProducer() override { endpoint.reset(); }

    void SetupDataSource(DataSourceInstanceId id,
                         const perfetto::protos::DataSourceConfig& config) override {
      protos::RelayFrame f = Frame();
      auto* m = f.mutable_to_producer()->mutable_setup_data_source();
      m->set_data_source_id(id);
      *m->mutable_config() = config;
      link_->Send(f);
    }
    void StartDataSource(DataSourceInstanceId id,
                         const perfetto::protos::DataSourceConfig& config) override {
      protos::RelayFrame f = Frame();
      auto* m = f.mutable_to_producer()->mutable_start_data_source();
      m->set_data_source_id(id);
      *m->mutable_config() = config;
      link_->Send(f);
    }
    void StopDataSource(DataSourceInstanceId id) override {
      protos::RelayFrame f = Frame();
      f.mutable_to_producer()->mutable_stop_data_source()->set_data_source_id(id);
      link_->Send(f);
    }
    void Flush(FlushRequestId id, const std::vector<DataSourceInstanceId>& instances) override {
      protos::RelayFrame f = Frame();
      auto* m = f.mutable_to_producer()->mutable_flush();
      m->set_flush_request_id(id);
      for (DataSourceInstanceId i : instances) m->add_data_source_ids(i);
      link_->Send(f);
    }
    void ClearIncrementalState(const std::vector<DataSourceInstanceId>& instances) override {
      protos::RelayFrame f = Frame();
      auto* m = f.mutable_to_producer()->mutable_clear_incremental_state();
      for (DataSourceInstanceId i : instances) m->add_data_source_ids(i);
      link_->Send(f);
    }
    void OnTriggersActivated(uint32_t sessions_triggered) override {
      protos::RelayFrame f = Frame();
      f.mutable_to_producer()->mutable_activate_triggers_response()->set_sessions_triggered(
          sessions_triggered);
      link_->Send(f);
    }
    void OnDisconnect(const std::string& reason) override {
      // The service dropped it (faults): the relay drops the guest's end.
      protos::RelayFrame f = Frame();
      f.mutable_producer_gone()->set_reason(reason);
      link_->Send(f);
    }

    std::unique_ptr<ProducerEndpoint> endpoint;

   private:
    protos::RelayFrame Frame() const {
      protos::RelayFrame f;
      f.set_producer(slot_);
      return f;
    }
    MachineLink* const link_;
    const uint32_t slot_;
  };

  void OnFrame(const protos::RelayFrame& f) {
    if (machine_id_ == 0 && f.msg_case() != protos::RelayFrame::kHello)
      return link_.Close("the relay's first frame is not its hello");
    switch (f.msg_case()) {
      case protos::RelayFrame::kHello: return OnHello(f.hello());
      case protos::RelayFrame::kClockSync: return OnClockSync(f.clock_sync());
      case protos::RelayFrame::kProducerConnected: return OnProducerConnected(f);
      case protos::RelayFrame::kProducerGone:
        producers_.erase(f.producer());
        return;
      case protos::RelayFrame::kToService: return OnToService(f);
      case protos::RelayFrame::kCommit: return OnCommit(f);
      case protos::RelayFrame::kTraceWriter: return OnTraceWriter(f);
      case protos::RelayFrame::kLosses:
        for (const auto& b : f.losses().buffers())
          service_->AddMachineLosses(machine_id_, b.target_buffer(), b.chunks(), b.packets(),
                                     b.bytes());
        // The relay counted the chunks of the frame an earlier link cut
        // off: that link's "lost in transit" was the same loss.
        if (f.losses().includes_cut_frame()) service_->UncountCutFrame(machine_id_);
        return;
      default:
        return link_.Close("a relay sent a frame only the host sends");
    }
  }

  void OnHello(const protos::RelayHello& hello) {
    protos::RelayFrame reply;
    auto* welcome = reply.mutable_welcome();
    if (machine_id_ != 0) return link_.Close("a second hello");
    if (hello.protocol_version() != kRelayProtocolVersion) {
      welcome->set_error("relay protocol " + std::to_string(hello.protocol_version()) +
                         " is not this sluiced's (" + std::to_string(kRelayProtocolVersion) +
                         "): use a sluice-relay of the same release");
    } else if (!ValidMachineName(hello.machine_name())) {
      welcome->set_error("the machine name must be 1 to 64 printable characters without spaces");
    }
    if (welcome->has_error()) {
      link_.Send(reply);
      return link_.Close("relay refused: " + welcome->error());
    }
    name_ = hello.machine_name();
    // The same machine back (rebooted, relay restarted) while its old link
    // has not noticed it ended: the new link wins.
    uint64_t previous = 0;
    bool cut = false;
    if (server_->TakePreviousLink(name_, id_, &previous, &cut)) {
      welcome->set_previous_link_bytes(previous);
      if (cut) welcome->set_previous_link_cut(true);
    }
    machine_id_ = service_->AddRelayedMachine(name_);
    welcome->set_machine_id(machine_id_);
    link_.Send(reply);
  }

  void OnClockSync(const protos::RelayClockSync& sync) {
    if (sync.step() == protos::RelayClockSync::PING) {
      if (pings_.size() >= kMaxPendingPings) pings_.erase(pings_.begin());
      pings_[sync.round()] = ReadRelayClocks();
      protos::RelayFrame pong;
      pong.mutable_clock_sync()->set_round(sync.round());
      pong.mutable_clock_sync()->set_step(protos::RelayClockSync::PONG);
      link_.Send(pong);
      return;
    }
    if (sync.step() != protos::RelayClockSync::READINGS)
      return link_.Close("a relay sent a clock step only the host sends");
    ClockRound round;
    round.t2h = ReadRelayClocks();
    auto it = pings_.find(sync.round());
    if (it == pings_.end()) return;  // Not ours, or too old: the round is void.
    round.t1h = it->second;
    pings_.erase(it);
    round.t1c = sync.client_at_ping();
    round.t2c = sync.client_at_pong();
    ClockOffsetEstimate e = EstimateClockOffset(round);
    if (e.valid && (!best_.valid || e.error_ns < best_.error_ns)) {
      best_ = e;
      best_round_ = round;
    }
    if (sync.last_of_burst() && best_.valid) {
      service_->SetMachineClockSync(machine_id_, MakeRemoteClockSync(best_round_), best_.offset_ns,
                                    best_.error_ns);
      synced_ = true;
      best_ = ClockOffsetEstimate{};
    }
  }

  void OnProducerConnected(const protos::RelayFrame& f) {
    // The machine's packets need its clock sync before them in the trace.
    if (!synced_) return link_.Close("a producer before the first clock sync");
    if (f.producer() == 0 || producers_.count(f.producer()))
      return link_.Close("a producer slot 0 or in use");
    if (producers_.size() >= kMaxProducersPerLink)
      return link_.Close("more than " + std::to_string(kMaxProducersPerLink) + " producers");
    const auto& c = f.producer_connected();
    auto p = std::make_unique<RelayedProducer>(this, f.producer());
    ProducerOptions options;
    options.name = c.name().substr(0, 256);
    options.machine_id = machine_id_;
    options.shm_size_hint_bytes = 1;  // The smallest: chunks come as bytes, not through it.
    PeerCredentials peer;
    peer.uid = static_cast<uid_t>(c.uid());
    peer.gid = static_cast<gid_t>(-1);
    peer.pid = c.pid();
    int unused_fd = -1;
    auto endpoint = service_->ConnectProducer(p.get(), options, peer, &unused_fd);
    if (!endpoint.ok()) {
      protos::RelayFrame gone;
      gone.set_producer(f.producer());
      gone.mutable_producer_gone()->set_reason(endpoint.status().message());
      link_.Send(gone);
      return;
    }
    p->endpoint = std::move(endpoint.value());
    producers_[f.producer()] = std::move(p);
  }

  ProducerEndpoint* EndpointOf(uint32_t slot) {
    auto it = producers_.find(slot);
    return it == producers_.end() ? nullptr : it->second->endpoint.get();
  }

  void OnToService(const protos::RelayFrame& f) {
    ProducerEndpoint* e = EndpointOf(f.producer());
    if (!e) return;  // Gone (the service dropped it); its late messages are void.
    if (!ForwardProducerRequest(f.to_service(), e))
      link_.Close("a producer message the relay does not forward");
  }

  void OnCommit(const protos::RelayFrame& f) {
    ProducerEndpoint* e = EndpointOf(f.producer());
    if (!e) return;
    chunks_.clear();
    for (const auto& c : f.commit().chunks())
      chunks_.push_back(CopiedChunk{c.target_buffer(), c.data()});
    lost_.clear();
    for (const auto& l : f.commit().lost()) {
      if (l.writer_id() == 0 || l.writer_id() > UINT16_MAX) continue;  // Not a writer: ignored.
      lost_.push_back(LostChunks{l.target_buffer(), static_cast<uint16_t>(l.writer_id()), l.last_chunk_id()});
    }
    uint32_t malformed = 0;
    CommitDataFromProto(f.commit().commit(), &request_, &malformed);
    request_.chunks_to_move.clear();  // Only bytes come over a link.
    e->CommitCopiedChunks(chunks_, lost_, request_);
  }

  void OnTraceWriter(const protos::RelayFrame& f) {
    ProducerEndpoint* e = EndpointOf(f.producer());
    if (!e) return;
    const uint32_t writer = f.trace_writer().writer_id();
    if (writer == 0 || writer > 0xffff) return link_.Close("a writer id out of range");
    if (f.trace_writer().target_buffer() != 0)
      e->commit_data_sink()->RegisterTraceWriter(static_cast<uint16_t>(writer),
                                                 f.trace_writer().target_buffer());
    else
      e->commit_data_sink()->UnregisterTraceWriter(static_cast<uint16_t>(writer));
  }

  void OnClosed(const std::string& reason, std::string_view cut) {
    // A commit cut off: its chunks are lost, how many the relay will say if
    // it comes back (RelayLosses.includes_cut_frame); one until then.
    const bool commit_cut = IsCommitFrameStart(cut);
    if (commit_cut) lost_in_transit_++;
    if (machine_id_ && !superseded_)
      server_->closed_links_[name_] = ClosedLink{link_.frame_bytes_received(), commit_cut};
    service_->LogLine("sluiced: relay link of machine '" + name_ + "' closed: " + reason);
    server_->OnLinkClosed(id_);  // Deletes this.
  }

  RelayServer* const server_;
  TracingService* const service_;
  const uint64_t id_;
  RelayLink link_;
  std::string name_;
  uint32_t machine_id_ = 0;
  bool synced_ = false;
  bool superseded_ = false;
  uint64_t lost_in_transit_ = 0;
  std::map<uint64_t, perfetto::protos::ClockSnapshot> pings_;
  ClockOffsetEstimate best_;
  ClockRound best_round_;
  std::map<uint32_t, std::unique_ptr<RelayedProducer>> producers_;
  // Reused per commit.
  std::vector<CopiedChunk> chunks_;
  std::vector<LostChunks> lost_;
  CommitDataRequest request_;
};

RelayServer::RelayServer(TracingService* service, ScopedFd listen_fd)
    : service_(service), listen_fd_(std::move(listen_fd)) {}

StatusOr<std::unique_ptr<RelayServer>> RelayServer::Create(TracingService* service,
                                                           const RelayAddress& address,
                                                           const ListenOptions& unix_listen,
                                                           int listen_fd) {
  ScopedFd fd;
  if (listen_fd >= 0) {
    fd.reset(listen_fd);
    int flags = fcntl(listen_fd, F_GETFL);
    if (flags < 0 || fcntl(listen_fd, F_SETFL, flags | O_NONBLOCK) != 0)
      return Status::Error("fd " + std::to_string(listen_fd) + " (relay socket): not a usable fd");
  } else {
    SLUICE_ASSIGN_OR_RETURN(fd, ListenRelayAddress(address, unix_listen));
  }
  std::unique_ptr<RelayServer> server(new RelayServer(service, std::move(fd)));
  RelayServer* s = server.get();
  service->loop()->RunAndWait([s] {
    s->service_->loop()->AddFdWatch(s->listen_fd_.get(), EPOLLIN, [s](uint32_t) { s->OnAcceptable(); });
  });
  return server;
}

std::unique_ptr<RelayServer> RelayServer::CreateWithoutListener(TracingService* service) {
  return std::unique_ptr<RelayServer>(new RelayServer(service, ScopedFd()));
}

RelayServer::~RelayServer() {
  service_->loop()->RunAndWait([this] {
    *alive_ = false;
    if (listen_fd_.valid()) service_->loop()->RemoveFdWatch(listen_fd_.get());
    links_.clear();
  });
}

void RelayServer::OnAcceptable() {
  for (int i = 0; i < 16; i++) {
    ScopedFd fd = AcceptRelayConnection(listen_fd_.get());
    if (!fd.valid()) return;
    AddLink(std::move(fd));
  }
}

void RelayServer::AddLink(ScopedFd fd) {
  if (links_.size() >= kMaxLinks) return;  // Closed by ScopedFd.
  const uint64_t id = next_link_id_++;
  auto link = std::make_unique<MachineLink>(this, id, std::move(fd));
  link->Start();
  links_[id] = std::move(link);
}

bool RelayServer::TakePreviousLink(const std::string& name, uint64_t except, uint64_t* bytes,
                                   bool* cut) {
  bool known = false;
  auto closed = closed_links_.find(name);
  if (closed != closed_links_.end()) {
    *bytes = closed->second.bytes;
    *cut = closed->second.cut;
    closed_links_.erase(closed);
    known = true;
  }
  for (auto& [id, link] : links_) {
    if (id == except || link->name() != name) continue;
    *bytes = link->frame_bytes_received();  // Read no further: it closes now.
    *cut = link->cut_in_commit();
    known = true;
    link->Supersede();
    link->Close("the machine connected again on a new link");
  }
  return known;
}

void RelayServer::OnLinkClosed(uint64_t id) {
  // From the link's own callback: delete it in a task of its own.
  std::weak_ptr<bool> alive = alive_;
  service_->loop()->PostTask([this, alive, id] {
    auto a = alive.lock();
    if (a && *a) links_.erase(id);
  });
}

}  // namespace sluice
