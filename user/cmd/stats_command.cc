#include "user/cmd/stats_command.h"

#include <cstdio>
#include <string>

#include "user/trace/trace_health.h"

namespace sluice {

int RunStatsCommand(int argc, char** argv) {
  if (argc != 2 || std::string(argv[1]) == "-h" || std::string(argv[1]) == "--help") {
    fputs("usage: sluice stats TRACE_FILE\n"
          "  prints loss and health figures; exit status 1 if any data was lost\n",
          argc == 2 ? stdout : stderr);
    return argc == 2 ? 0 : 2;
  }
  auto health = AnalyzeTraceFile(argv[1]);
  if (!health.ok()) {
    fprintf(stderr, "sluice stats: %s\n", health.status().message().c_str());
    return 2;
  }
  printf("%s: %llu packets, %llu bytes, %llu ftrace events, %llu sequences%s\n", argv[1],
         static_cast<unsigned long long>(health->file.packets),
         static_cast<unsigned long long>(health->file.bytes),
         static_cast<unsigned long long>(health->ftrace_events),
         static_cast<unsigned long long>(health->sequences),
         health->file.truncated ? " (truncated: valid up to the last complete packet)" : "");
  fputs(FormatHealthTable(*health).c_str(), stdout);
  uint64_t lost = health->data_loss_total();
  if (lost) printf("data loss: %llu (see the rows with severity data_loss)\n",
                   static_cast<unsigned long long>(lost));
  return lost ? 1 : 0;
}

}  // namespace sluice
