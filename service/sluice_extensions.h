// sluice's own fields in upstream Perfetto's messages, described for readers
// that do not know them.
//
// sluice writes nine fields upstream's schema does not have, all numbered
// 60000 and up so that they can never meet an upstream field
// (docs/PROTOS.md, "sluice's fields in upstream messages"):
//
//   perfetto.protos.TracePacket.bpf_stats              60002  sluice.protos.BpfStats
//   perfetto.protos.TraceStats.sluice_service_stats    60003  sluice.protos.ServiceSessionStats
//   perfetto.protos.FtraceCpuStats.sluice_read_path    60005  sluice.protos.FtraceReadPath (enum)
//   perfetto.protos.FtraceCpuStats.sluice_smb_full_waits    60006  uint64
//   perfetto.protos.FtraceCpuStats.sluice_smb_full_wait_ms  60007  uint64
//   perfetto.protos.FtraceCpuStats.sluice_most_pages_per_wake  60008  uint64
//   perfetto.protos.FtraceStats.sluice_buffer_percent   60009  uint32
//   perfetto.protos.DataSourceConfig.bpf_config        60001  sluice.protos.BpfConfig
//   perfetto.protos.FtraceConfig.ring_buffer_read_mode 60004  sluice.protos.FtraceReadMode (enum)
//                        (the last two inside the TraceConfig the service writes into every trace)
//
// Every trace carries them described once, in an ExtensionDescriptor packet
// (TracePacket field 72, service/service_packets.h): a FileDescriptorSet that
// holds the sluice/*.proto files declaring the field types, as compiled in,
// and one more file, sluice/perfetto_extensions.proto, that declares each
// field as a proto2 extension of its upstream message:
//
//   package sluice.protos;
//   extend perfetto.protos.TracePacket { optional BpfStats bpf_stats = 60002; }
//   ...
//
// Nothing is hand-written: the fields are found by walking the compiled-in
// descriptors from TracePacket, so a tenth field is described as soon as
// it is declared.
//
// Upstream's trace_processor takes the set in (v58.2 checked) and refuses
// the whole trace if an extendee is not a message it knows ("Extendee does
// not exist ..."): only fields of perfetto.protos messages, which by the
// mirror rule are upstream's (docs/PROTOS.md), may ever be described here.
#ifndef SLUICE_SERVICE_SLUICE_EXTENSIONS_H_
#define SLUICE_SERVICE_SLUICE_EXTENSIONS_H_

#include <vector>

#include <google/protobuf/descriptor.h>
#include <google/protobuf/descriptor.pb.h>

namespace sluice {

// Fields numbered this or higher in a perfetto.protos message are sluice's.
inline constexpr int kFirstSluiceFieldNumber = 60000;

// The file of the set that holds the `extend` declarations.
inline constexpr char kSluiceExtensionsFileName[] = "sluice/perfetto_extensions.proto";

// Every field numbered kFirstSluiceFieldNumber or more of a perfetto.protos
// message that a TracePacket can hold (at any depth), ordered by extendee
// name and number.
std::vector<const google::protobuf::FieldDescriptor*> SluiceFieldsInUpstreamMessages();

// The set described above: the files of the fields' types and of their
// imports (sluice's, not upstream's), each before the files that import it,
// then kSluiceExtensionsFileName. Imports of upstream files are named by
// upstream's path (protos/perfetto/...), which sluice's mirror keeps.
google::protobuf::FileDescriptorSet SluiceExtensionSet();

}  // namespace sluice

#endif  // SLUICE_SERVICE_SLUICE_EXTENSIONS_H_
