#include "user/cmd/sessions_command.h"

#include <cinttypes>
#include <cstdio>
#include <vector>

#include "service/ipc/consumer_ipc_client.h"
#include "shm/base/command_line.h"
#include "shm/base/string_util.h"
#include "user/cmd/record_config.h"

namespace sluice {
namespace {

constexpr char kUsage[] =
    "usage: sluice sessions [--consumer-socket PATH]\n"
    "  lists the tracing sessions running in sluiced: key, owner, state, config,\n"
    "  buffer fill, losses so far and output file. Sessions of other users are\n"
    "  listed to root only.\n"
    "  --consumer-socket PATH  sluiced's consumer socket (default /run/sluice/consumer.sock)\n"
    "Exit status: 0 listed (even none); 1 sluiced cannot be reached.\n";

// 512 KiB, 64 MiB, 1.5 GiB: buffer sizes are binary, as size_kb is.
std::string BinaryBytes(uint64_t bytes) {
  char text[32];
  const double b = static_cast<double>(bytes);
  if (bytes >= (1ull << 30)) snprintf(text, sizeof(text), "%.1f GiB", b / (1ull << 30));
  else if (bytes >= (1ull << 20)) snprintf(text, sizeof(text), "%.1f MiB", b / (1ull << 20));
  else snprintf(text, sizeof(text), "%.0f KiB", b / 1024);
  std::string s = text;
  // "64.0 MiB" reads better as "64 MiB".
  if (auto dot = s.find(".0 "); dot != std::string::npos) s.erase(dot, 2);
  return s;
}

// 45s, 12m05s, 3h20m, 2d04h.
std::string Age(uint64_t ms) {
  const uint64_t s = ms / 1000;
  char text[32];
  if (s < 60) snprintf(text, sizeof(text), "%" PRIu64 "s", s);
  else if (s < 3600) snprintf(text, sizeof(text), "%" PRIu64 "m%02" PRIu64 "s", s / 60, s % 60);
  else if (s < 86400) snprintf(text, sizeof(text), "%" PRIu64 "h%02" PRIu64 "m", s / 3600, s / 60 % 60);
  else snprintf(text, sizeof(text), "%" PRIu64 "d%02" PRIu64 "h", s / 86400, s / 3600 % 24);
  return text;
}

std::string Headline(const SessionInfo& s) {
  std::string line = "session " + std::to_string(s.id);
  if (!s.key.empty()) line += " '" + s.key + "'";
  else if (!s.unique_session_name.empty()) line += " '" + s.unique_session_name + "' (unique_session_name)";
  if (s.cloned_from) line += ", a clone of session " + std::to_string(s.cloned_from);
  line += " (uid " + std::to_string(s.owner_uid) + "): ";
  switch (s.state) {
    case SessionInfo::State::kConfigured: line += s.triggers.empty() ? "not started" : "waiting"; break;
    case SessionInfo::State::kStarted: line += "recording"; break;
    case SessionInfo::State::kStopping: line += "stopping"; break;
    case SessionInfo::State::kEnded: line += "ended"; break;
  }
  if (s.detached) line += ", detached";
  else if (s.consumer_pid) line += ", attached to pid " + std::to_string(s.consumer_pid);
  else line += ", its consumer went away";
  line += ", " + Age(s.age_ms);
  if (s.duration_ms && !s.cloned_from) line += " of " + Age(s.duration_ms);
  return line;
}

std::string ConfigLine(const SessionInfo& s) {
  std::vector<std::string> buffers;
  for (const SessionInfo::Buffer& b : s.buffers)
    buffers.push_back(BinaryBytes(b.size_bytes) + (b.discard ? " discard" : " ring"));
  std::string line = "  config: " + CountOf(s.buffers.size(), "buffer") + " (" + Join(buffers, ", ") + ")";
  if (!s.data_sources.empty()) line += "; " + Join(s.data_sources, ", ");
  if (s.cloned_from) line += "; read by its consumer";
  else line += s.write_into_file ? "; streamed into its file" : "; written at the end";
  return line;
}

std::string FillLine(const SessionInfo& s) {
  uint64_t held = 0, size = 0;
  for (const SessionInfo::Buffer& b : s.buffers) {
    held += b.bytes_held;
    size += b.size_bytes;
  }
  if (s.state == SessionInfo::State::kEnded && s.detached && held == 0)
    return "  buffers: freed (the file holds the trace)";
  char pct[16];
  snprintf(pct, sizeof(pct), "%.0f%%", size ? 100.0 * static_cast<double>(held) / static_cast<double>(size) : 0.0);
  return "  buffers: " + BinaryBytes(held) + " of " + BinaryBytes(size) + " held (" + pct + ")";
}

std::string LossLine(const SessionInfo& s) {
  std::vector<std::string> losses;
  auto add = [&](uint64_t n, const char* one, const char* many) {
    if (n) losses.push_back(std::to_string(n) + " " + (n == 1 ? one : many));
  };
  add(s.chunks_overwritten, "chunk overwritten", "chunks overwritten");
  add(s.chunks_discarded, "chunk discarded", "chunks discarded");
  add(s.trace_writer_packet_loss, "packet lost by a writer", "packets lost by writers");
  add(s.patches_failed, "patch failed", "patches failed");
  add(s.abi_violations, "ABI violation", "ABI violations");
  add(s.chunks_lost, "chunk lost with its producer", "chunks lost with their producers");
  add(s.flushes_failed, "flush failed", "flushes failed");
  return "  losses so far: " + (losses.empty() ? std::string("none") : Join(losses, ", "));
}

std::string OutputLine(const SessionInfo& s) {
  if (s.output_path.empty() && s.output_temp_path.empty()) {
    if (s.file_bytes) return "  output: " + BinaryBytes(s.file_bytes) + " written";
    return "";
  }
  std::string line = "  output: " + (s.output_path.empty() ? s.output_temp_path : s.output_path);
  if (!s.output_temp_path.empty() && s.output_temp_path != s.output_path) {
    line += s.state == SessionInfo::State::kEnded && s.detached
                ? " (written to " + s.output_temp_path + "; sluice record --attach=" + s.key +
                      " puts it in place)"
                : " (written to " + s.output_temp_path + " until the end)";
  }
  if (s.file_bytes) line += ", " + BinaryBytes(s.file_bytes) + " so far";
  return line;
}

}  // namespace

std::string FormatSessionList(const SessionList& list) {
  std::string out;
  if (list.sessions.empty()) out += "no tracing sessions\n";
  for (const SessionInfo& s : list.sessions) {
    out += Headline(s) + "\n" + ConfigLine(s) + "\n";
    if (!s.triggers.empty()) out += "  triggers: " + s.triggers + "\n";
    out += FillLine(s) + "\n" + LossLine(s) + "\n";
    if (std::string output = OutputLine(s); !output.empty()) out += output + "\n";
    if (!s.error.empty()) out += "  ended on: " + s.error + "\n";
  }
  if (list.other_users)
    out += "(" + CountOf(list.other_users, "session") + " of other users not listed: run as root to see them)\n";
  return out;
}

int RunSessionsCommand(int argc, char** argv) {
  enum { kConsumerSocket = kFirstLongOnly };
  static const struct option kOptions[] = {{"help", no_argument, nullptr, 'h'},
                                           {"consumer-socket", required_argument, nullptr, kConsumerSocket},
                                           {nullptr, 0, nullptr, 0}};
  std::string socket = RecordArgs{}.consumer_socket;
  Status parsed = ParseCommandLine(argc, argv, "h", kOptions, [&](const CommandLineArg& arg) {
    if (arg.id == 'h') return HelpRequested();
    if (arg.id == kConsumerSocket) {
      socket = arg.value;
      return Status::Ok();
    }
    return Status::Error("unexpected argument '" + std::string(arg.value) + "'");
  });
  if (!parsed.ok()) return CommandLineExit(parsed, "sluice sessions", kUsage);
  auto client = ConsumerIpcClient::Connect(socket);
  if (!client.ok()) {
    fprintf(stderr, "sluice sessions: %s\n", client.status().message().c_str());
    return 1;
  }
  auto list = (*client)->ListSessions();
  if (!list.ok()) {
    fprintf(stderr, "sluice sessions: %s\n", list.status().message().c_str());
    return 1;
  }
  fputs(FormatSessionList(*list).c_str(), stdout);
  return 0;
}

}  // namespace sluice
