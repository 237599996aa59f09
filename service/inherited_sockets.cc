#include "service/inherited_sockets.h"

#include <stdlib.h>

#include <cstdint>
#include <utility>

#include "shm/base/string_util.h"

namespace sluice {
namespace {

constexpr int kSystemdFirstFd = 3;  // SD_LISTEN_FDS_START.

StatusOr<InheritedSockets> FromSystemd(const char* listen_pid, const char* listen_fds,
                                       const char* listen_fdnames, pid_t pid) {
  uint64_t for_pid = 0, nfds = 0;
  if (!ParseU64(listen_pid, &for_pid) || for_pid != static_cast<uint64_t>(pid))
    return InheritedSockets{};  // Meant for another process.
  // The relay socket's place, from its name (sluice-relay.socket).
  int relay_index = -1;
  if (listen_fdnames) {
    std::string names = listen_fdnames;
    int index = 0;
    for (size_t pos = 0;; index++) {
      size_t colon = names.find(':', pos);
      if (names.substr(pos, colon == std::string::npos ? std::string::npos : colon - pos) == "relay")
        relay_index = index;
      if (colon == std::string::npos) break;
      pos = colon + 1;
    }
  }
  const uint64_t want = relay_index >= 0 ? 3 : 2;
  if (!ParseU64(listen_fds, &nfds) || nfds != want || relay_index >= 3)
    return Status::Error(std::string("socket activation passed LISTEN_FDS=") + listen_fds +
                         "; expected 2 (producer, consumer: give sluiced.socket two "
                         "ListenStream= lines in that order), 3 with sluice-relay.socket");
  InheritedSockets s;
  int next = kSystemdFirstFd;
  for (int i = 0; i < static_cast<int>(nfds); i++) {
    const int fd = kSystemdFirstFd + i;
    if (i == relay_index) s.relay_fd = fd;
    else if (next++ == kSystemdFirstFd) s.producer_fd = fd;
    else s.consumer_fd = fd;
  }
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
    SLUICE_ASSIGN_OR_RETURN(InheritedSockets s,
                            FromSystemd(listen_pid, listen_fds, get_env("LISTEN_FDNAMES"), pid));
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
