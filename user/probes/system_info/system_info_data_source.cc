#include "user/probes/system_info/system_info_data_source.h"

#include <sys/sysinfo.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "perfetto/common/system_info.pb.h"
#include "perfetto/trace/trace_packet.pb.h"
#include "shm/base/clock.h"

namespace sluice {

void WriteSystemInfoPacket(TraceWriter* writer) {
  using perfetto::protos::SystemInfo;
  using perfetto::protos::TracePacket;
  using perfetto::protos::Utsname;
  auto packet = writer->NewTracePacket();
  packet->WriteVarInt(TracePacket::kTimestampFieldNumber, BootTimeNs());
  packet->BeginNested(TracePacket::kSystemInfoFieldNumber);
  struct utsname uts;
  if (uname(&uts) == 0) {
    packet->BeginNested(SystemInfo::kUtsnameFieldNumber);
    packet->WriteString(Utsname::kSysnameFieldNumber, uts.sysname);
    packet->WriteString(Utsname::kVersionFieldNumber, uts.version);
    packet->WriteString(Utsname::kReleaseFieldNumber, uts.release);
    packet->WriteString(Utsname::kMachineFieldNumber, uts.machine);
    packet->EndNested();
  }
  packet->WriteString(SystemInfo::kTracingServiceVersionFieldNumber, "sluice 0.1");
  packet->WriteVarInt(SystemInfo::kPageSizeFieldNumber, static_cast<uint64_t>(sysconf(_SC_PAGESIZE)));
  packet->WriteVarInt(SystemInfo::kNumCpusFieldNumber,
                      static_cast<uint64_t>(sysconf(_SC_NPROCESSORS_CONF)));
  packet->WriteInt(SystemInfo::kHzFieldNumber, sysconf(_SC_CLK_TCK));
  struct sysinfo si;
  if (sysinfo(&si) == 0)
    packet->WriteVarInt(SystemInfo::kSystemRamBytesFieldNumber,
                        static_cast<uint64_t>(si.totalram) * si.mem_unit);
  time_t now = time(nullptr);
  struct tm local;
  if (localtime_r(&now, &local))
    packet->WriteInt(SystemInfo::kTimezoneOffMinsFieldNumber, local.tm_gmtoff / 60);
  packet->EndNested();
  packet.Finalize();
  writer->Flush();
}

}  // namespace sluice
