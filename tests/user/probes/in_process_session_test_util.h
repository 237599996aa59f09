// The pipeline of an in-process `sluice record` for kernel tests: a
// TracingService on its own loop thread, a ProbesProducer connected to it
// with a real SMB, and a consumer. The test can hold the service's lock
// (service()->RunWithServiceLockForTesting) to stand for a service that
// takes no chunks for a while.
//
//   InProcessSession s(/*smb_kb=*/2048, probe_options);
//   ASSERT_TRUE(s.Start(trace_config).ok());   // and the data source running
//   ... workload ...
//   auto packets = s.StopAndRead();
//
// Teardown in the order record_command.cc uses (consumer, probes, producer
// connection, service, loop) on every path, so a failed ASSERT does not
// leave the probes using a destroyed connection.
#ifndef SLUICE_TESTS_USER_PROBES_IN_PROCESS_SESSION_TEST_UTIL_H_
#define SLUICE_TESTS_USER_PROBES_IN_PROCESS_SESSION_TEST_UTIL_H_

#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "perfetto/config/trace_config.pb.h"
#include "perfetto/trace/trace_packet.pb.h"
#include "service/event_loop.h"
#include "service/tracing_service.h"
#include "shm/base/status.h"
#include "tests/kernel_test_util.h"
#include "user/probes/probes_producer.h"

namespace sluice::testing {

class InProcessSession {
 public:
  // The probes keep no tracefs state files and restore none: tests leave
  // tracefs as they found it themselves.
  InProcessSession(uint32_t smb_kb, ProbesProducerOptions options) : service_(loop_.loop()) {
    options.tracefs_state_dir.clear();
    options.restore_tracefs_on_connect = false;
    probes_ = std::make_unique<ProbesProducer>(options);
    auto connection = service_.ConnectProducer(probes_.get(), ProbesConnectionOptions(smb_kb));
    if (!connection.ok()) {
      error_ = connection.status().message();
      return;
    }
    connection_ = std::move(connection.value());
    probes_->Connect(connection_.get());
    consumer_ = service_.ConnectConsumer();
  }
  ~InProcessSession() {
    consumer_.reset();
    if (connection_) probes_->Disconnect();
    connection_.reset();
  }
  InProcessSession(const InProcessSession&) = delete;
  InProcessSession& operator=(const InProcessSession&) = delete;

  // Enables the session and waits until its one data source runs (or
  // failed to start: then the error). A flush or stop timeout the config
  // leaves to the service's default (5 s) is the test's scaled minute: a
  // final read of full kernel buffers through a small SMB can take longer
  // than 5 s in a QEMU guest under TCG, and the session would then end
  // without it (a FINAL_FLUSH_FAILED loss the test did not cause).
  Status Start(const perfetto::protos::TraceConfig& config) {
    if (!error_.empty()) return Status::Error(error_);
    perfetto::protos::TraceConfig patient = config;
    const auto minute = static_cast<uint32_t>(ScaledTimeoutMs(60000));
    if (!patient.has_flush_timeout_ms()) patient.set_flush_timeout_ms(minute);
    if (!patient.has_data_source_stop_timeout_ms()) patient.set_data_source_stop_timeout_ms(minute);
    if (Status s = consumer_->EnableTracing(patient); !s.ok()) return s;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(ScaledTimeoutMs(60000));
    while (probes_->running_instances() + probes_->start_errors().size() < 1) {
      if (std::chrono::steady_clock::now() > deadline) return Status::Error("the data source did not start");
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    if (!probes_->start_errors().empty()) return Status::Error(probes_->start_errors()[0]);
    return Status::Ok();
  }

  // Ends the session and returns every packet the service kept.
  StatusOr<std::vector<perfetto::protos::TracePacket>> StopAndRead() {
    if (Status s = consumer_->DisableTracing(); !s.ok()) return s;
    std::string error;
    if (!consumer_->WaitForTracingDisabled(static_cast<uint32_t>(ScaledTimeoutMs(60000)), &error))
      return Status::Error("the session did not end: " + error);
    std::vector<perfetto::protos::TracePacket> packets;
    bool parsed = true;
    Status read = consumer_->ReadBuffers([&](std::string_view bytes) {
      parsed = packets.emplace_back().ParseFromArray(bytes.data(), static_cast<int>(bytes.size())) && parsed;
    });
    if (!read.ok()) return read;
    if (!parsed) return Status::Error("a packet does not parse");
    return packets;
  }

  TracingService* service() { return &service_; }
  ProbesProducer* probes() { return probes_.get(); }
  ConsumerEndpoint* consumer() { return consumer_.get(); }

 private:
  EventLoopThread loop_;
  TracingService service_;
  std::unique_ptr<ProbesProducer> probes_;
  std::unique_ptr<ProducerEndpoint> connection_;
  std::unique_ptr<ConsumerEndpoint> consumer_;
  std::string error_;
};

}  // namespace sluice::testing

#endif  // SLUICE_TESTS_USER_PROBES_IN_PROCESS_SESSION_TEST_UTIL_H_
