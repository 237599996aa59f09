#include "service/inherited_sockets.h"

#include <stdlib.h>

#include <cstdint>
#include <utility>

#include "shm/base/string_util.h"

namespace sluice {
namespace {

constexpr int kSystemdFirstFd = 3;  // SD_LISTEN_FDS_START.

StatusOr<InheritedSockets> FromSystemd(const char* listen_pid, const char* listen_fds, pid_t pid) {
  uint64_t for_pid = 0, nfds = 0;
  if (!ParseU64(listen_pid, &for_pid) || for_pid != static_cast<uint64_t>(pid))
    return InheritedSockets{};  // Meant for another process.
  if (!ParseU64(listen_fds, &nfds) || nfds != 2)
    return Status::Error(std::string("socket activation passed LISTEN_FDS=") + listen_fds +
                         "; expected 2 (producer, consumer): give sluiced.socket two "
                         "ListenStream= lines in that order");
  InheritedSockets s;
  s.producer_fd = kSystemdFirstFd;
  s.consumer_fd = kSystemdFirstFd + 1;
  s.source = "systemd";
  return s;
}

StatusOr<int> AndroidFd(const char* name, const char* value) {
  uint32_t fd = 0;
  if (!ParseU32(value, &fd) || fd > 1u << 20)
    return Status::Error(std::string(name) + "='" + value + "' is not a file descriptor");
  return static_cast<int>(fd);
}

// One pair of init's sockets (`socket NAME_producer` and `NAME_consumer`):
// both or neither.
Status AndroidPair(const std::function<const char*(const char*)>& get_env, const char* producer_env,
                   const char* consumer_env, const char* name, int* producer_fd, int* consumer_fd) {
  const char* producer = get_env(producer_env);
  const char* consumer = get_env(consumer_env);
  if (!producer && !consumer) return Status::Ok();
  if (!producer || !consumer)
    return Status::Error(std::string("init passed only ") + (producer ? producer_env : consumer_env) +
                         ": give the sluiced service both `socket " + name + "_producer` and `socket " +
                         name + "_consumer` lines");
  SLUICE_ASSIGN_OR_RETURN(*producer_fd, AndroidFd(producer_env, producer));
  SLUICE_ASSIGN_OR_RETURN(*consumer_fd, AndroidFd(consumer_env, consumer));
  return Status::Ok();
}

}  // namespace

StatusOr<InheritedSockets> FindInheritedSockets(
    const std::function<const char*(const char*)>& get_env, pid_t pid) {
  const char* listen_pid = get_env("LISTEN_PID");
  const char* listen_fds = get_env("LISTEN_FDS");
  if (listen_pid && listen_fds) {
    SLUICE_ASSIGN_OR_RETURN(InheritedSockets s, FromSystemd(listen_pid, listen_fds, pid));
    if (!s.source.empty()) return s;
  }
  InheritedSockets s;
  SLUICE_RETURN_IF_ERROR(AndroidPair(get_env, kAndroidProducerSocketEnv, kAndroidConsumerSocketEnv,
                                     "sluice", &s.producer_fd, &s.consumer_fd));
  SLUICE_RETURN_IF_ERROR(AndroidPair(get_env, kAndroidTracedProducerSocketEnv,
                                     kAndroidTracedConsumerSocketEnv, "traced",
                                     &s.perfetto_producer_fd, &s.perfetto_consumer_fd));
  if (s.producer_fd < 0 && s.perfetto_producer_fd < 0) return InheritedSockets{};
  if (s.producer_fd < 0) {
    // Only traced's pair: sluiced serves on it alone.
    std::swap(s.producer_fd, s.perfetto_producer_fd);
    std::swap(s.consumer_fd, s.perfetto_consumer_fd);
  }
  s.source = "Android init";
  return s;
}

void ClearInheritedSocketsEnv() {
  for (const char* name : {"LISTEN_PID", "LISTEN_FDS", "LISTEN_FDNAMES", kAndroidProducerSocketEnv,
                           kAndroidConsumerSocketEnv, kAndroidTracedProducerSocketEnv,
                           kAndroidTracedConsumerSocketEnv})
    unsetenv(name);
}

}  // namespace sluice
