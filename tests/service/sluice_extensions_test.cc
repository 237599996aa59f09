// Tests for service/sluice_extensions.h: sluice's fields in upstream
// messages are found from the compiled-in descriptors, and the set that
// describes them parses back, with protobuf's own DescriptorPool, into one
// proto2 extension per field of the right number, type and extendee.
#include "service/sluice_extensions.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <set>
#include <string>

#include <google/protobuf/dynamic_message.h>

#include "perfetto/common/trace_stats.pb.h"
#include "perfetto/config/data_source_config.pb.h"
#include "perfetto/trace/trace_packet.pb.h"
#include "sluice/bpf.pb.h"
#include "sluice/bpf_config.pb.h"
#include "sluice/ftrace.pb.h"
#include "sluice/service_stats.pb.h"

namespace sluice {
namespace {

using google::protobuf::DescriptorPool;
using google::protobuf::FieldDescriptor;

std::string ProtosDir() {
  if (const char* env = std::getenv("SLUICE_PROTOS_DIR")) return env;
  return "protos";  // tests run from the project root
}

// "name = N" declarations with N >= 60000 in the .proto files of upstream's
// package (sluice's mirror, protos/perfetto/): what the set must describe.
std::set<std::string> SluiceNumberedDeclarations() {
  std::set<std::string> out;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(ProtosDir() + "/perfetto")) {
    if (entry.path().extension() != ".proto") continue;
    std::ifstream in(entry.path());
    std::string line;
    while (std::getline(in, line)) {
      size_t start = line.find_first_not_of(' ');
      if (start == std::string::npos || line.compare(start, 2, "//") == 0) continue;
      size_t eq = line.find(" = ");
      if (eq == std::string::npos) continue;
      const long number = std::strtol(line.c_str() + eq + 3, nullptr, 10);
      if (number < kFirstSluiceFieldNumber) continue;
      size_t name_start = line.rfind(' ', eq - 1);
      out.insert(line.substr(name_start + 1, eq - name_start - 1) + "=" + std::to_string(number));
    }
  }
  return out;
}

TEST(SluiceExtensionsTest, FindsEverySluiceFieldOfUpstreamMessages) {
  std::vector<std::string> found;
  for (const FieldDescriptor* f : SluiceFieldsInUpstreamMessages())
    found.push_back(f->containing_type()->full_name() + "." + f->name() + "=" + std::to_string(f->number()));
  EXPECT_EQ(found, (std::vector<std::string>{"perfetto.protos.DataSourceConfig.bpf_config=60001",
                                             "perfetto.protos.FtraceConfig.ring_buffer_read_mode=60004",
                                             "perfetto.protos.FtraceCpuStats.sluice_read_path=60005",
                                             "perfetto.protos.FtraceCpuStats.sluice_smb_full_waits=60006",
                                             "perfetto.protos.FtraceCpuStats.sluice_smb_full_wait_ms=60007",
                                             "perfetto.protos.FtraceCpuStats.sluice_most_pages_per_wake=60008",
                                             "perfetto.protos.FtraceStats.sluice_buffer_percent=60009",
                                             "perfetto.protos.FtraceStats.sluice_own_instance=60010",
                                             "perfetto.protos.FtraceStats.sluice_other_readers=60011",
                                             "perfetto.protos.TraceConfig.sluice_rotation=60012",
                                             "perfetto.protos.TracePacket.bpf_stats=60002",
                                             "perfetto.protos.TraceStats.sluice_service_stats=60003"}));
  // Nothing declared in protos/perfetto/ with such a number escapes the walk
  // (a field a TracePacket cannot reach would not be in any trace).
  std::set<std::string> walked;
  for (const FieldDescriptor* f : SluiceFieldsInUpstreamMessages())
    walked.insert(f->name() + "=" + std::to_string(f->number()));
  EXPECT_EQ(SluiceNumberedDeclarations(), walked);
}

// Builds the set's files into a pool of their own. Upstream's files are not
// in the set (its readers have them), so their names stay unresolved:
// protobuf then stands in placeholder messages for the extendees.
class ExtensionSetPool {
 public:
  ExtensionSetPool() {
    pool_.AllowUnknownDependencies();
    const google::protobuf::FileDescriptorSet set = SluiceExtensionSet();
    for (const auto& file : set.file()) {
      if (!pool_.BuildFile(file)) ADD_FAILURE() << "does not build: " << file.name();
      names_.push_back(file.name());
    }
  }
  const DescriptorPool& pool() const { return pool_; }
  const std::vector<std::string>& names() const { return names_; }

 private:
  DescriptorPool pool_;
  std::vector<std::string> names_;
};

TEST(SluiceExtensionsTest, SetParsesBackIntoOneExtensionPerField) {
  ExtensionSetPool set;
  // sluice's files, each after its imports, and the extensions last; no
  // upstream file.
  ASSERT_FALSE(set.names().empty());
  EXPECT_EQ(set.names().back(), kSluiceExtensionsFileName);
  for (const std::string& name : set.names()) EXPECT_EQ(name.rfind("perfetto/", 0), std::string::npos) << name;

  struct Expected {
    const char* name;
    int number;
    const char* extendee;
    FieldDescriptor::Type kind;
    const char* type;
    bool repeated = false;
  };
  const Expected expected[] = {
      {"sluice.protos.bpf_config", 60001, "perfetto.protos.DataSourceConfig", FieldDescriptor::TYPE_MESSAGE,
       "sluice.protos.BpfConfig"},
      {"sluice.protos.bpf_stats", 60002, "perfetto.protos.TracePacket", FieldDescriptor::TYPE_MESSAGE,
       "sluice.protos.BpfStats"},
      {"sluice.protos.sluice_service_stats", 60003, "perfetto.protos.TraceStats", FieldDescriptor::TYPE_MESSAGE,
       "sluice.protos.ServiceSessionStats"},
      {"sluice.protos.ring_buffer_read_mode", 60004, "perfetto.protos.FtraceConfig", FieldDescriptor::TYPE_ENUM,
       "sluice.protos.FtraceReadMode"},
      {"sluice.protos.sluice_read_path", 60005, "perfetto.protos.FtraceCpuStats", FieldDescriptor::TYPE_ENUM,
       "sluice.protos.FtraceReadPath"},
      {"sluice.protos.sluice_smb_full_waits", 60006, "perfetto.protos.FtraceCpuStats", FieldDescriptor::TYPE_UINT64,
       ""},
      {"sluice.protos.sluice_smb_full_wait_ms", 60007, "perfetto.protos.FtraceCpuStats",
       FieldDescriptor::TYPE_UINT64, ""},
      {"sluice.protos.sluice_most_pages_per_wake", 60008, "perfetto.protos.FtraceCpuStats",
       FieldDescriptor::TYPE_UINT64, ""},
      {"sluice.protos.sluice_buffer_percent", 60009, "perfetto.protos.FtraceStats", FieldDescriptor::TYPE_UINT32,
       ""},
      {"sluice.protos.sluice_own_instance", 60010, "perfetto.protos.FtraceStats", FieldDescriptor::TYPE_STRING, ""},
      {"sluice.protos.sluice_other_readers", 60011, "perfetto.protos.FtraceStats", FieldDescriptor::TYPE_STRING, "",
       true},
      {"sluice.protos.sluice_rotation", 60012, "perfetto.protos.TraceConfig", FieldDescriptor::TYPE_MESSAGE,
       "sluice.protos.RotationConfig"},
  };
  const auto* file = set.pool().FindFileByName(kSluiceExtensionsFileName);
  ASSERT_NE(file, nullptr);
  EXPECT_EQ(file->extension_count(), 12);
  for (const Expected& e : expected) {
    SCOPED_TRACE(e.name);
    const FieldDescriptor* ext = set.pool().FindExtensionByName(e.name);
    ASSERT_NE(ext, nullptr);
    EXPECT_TRUE(ext->is_extension());
    EXPECT_EQ(ext->number(), e.number);
    EXPECT_EQ(ext->type(), e.kind);
    EXPECT_EQ(ext->label(), e.repeated ? FieldDescriptor::LABEL_REPEATED : FieldDescriptor::LABEL_OPTIONAL);
    EXPECT_EQ(ext->containing_type()->full_name(), e.extendee);
    if (e.kind == FieldDescriptor::TYPE_MESSAGE) {
      ASSERT_NE(ext->message_type(), nullptr);
      EXPECT_EQ(ext->message_type()->full_name(), e.type);
    } else if (e.kind == FieldDescriptor::TYPE_ENUM) {
      ASSERT_NE(ext->enum_type(), nullptr);
      EXPECT_EQ(ext->enum_type()->full_name(), e.type);
    }
    EXPECT_EQ(ext->containing_oneof(), nullptr);
  }
}

TEST(SluiceExtensionsTest, DescribedMessagesAreTheCompiledInOnes) {
  ExtensionSetPool set;
  for (const auto* generated :
       {protos::BpfStats::descriptor(), protos::BpfConfig::descriptor(), protos::ServiceSessionStats::descriptor()}) {
    SCOPED_TRACE(generated->full_name());
    const auto* described = set.pool().FindMessageTypeByName(generated->full_name());
    ASSERT_NE(described, nullptr);
    ASSERT_EQ(described->field_count(), generated->field_count());
    for (int i = 0; i < generated->field_count(); i++) {
      EXPECT_EQ(described->field(i)->name(), generated->field(i)->name());
      EXPECT_EQ(described->field(i)->number(), generated->field(i)->number());
      EXPECT_EQ(described->field(i)->type(), generated->field(i)->type());
    }
  }
  for (const auto* generated : {protos::FtraceReadMode_descriptor(), protos::FtraceReadPath_descriptor()}) {
    SCOPED_TRACE(generated->full_name());
    const auto* described = set.pool().FindEnumTypeByName(generated->full_name());
    ASSERT_NE(described, nullptr);
    ASSERT_EQ(described->value_count(), generated->value_count());
    for (int i = 0; i < generated->value_count(); i++) {
      EXPECT_EQ(described->value(i)->name(), generated->value(i)->name());
      EXPECT_EQ(described->value(i)->number(), generated->value(i)->number());
    }
  }
}

// A reader that has upstream's messages and the set decodes sluice's bytes
// by the extensions. Upstream's messages are stood in for by empty ones of
// the same names and files that accept extensions from 60000 up (what a
// lenient reader like trace_processor does without asking), then the set is
// built on top and a TracePacket written by sluice is parsed as a dynamic
// message: its field 60002 comes back as the extension, a BpfStats.
TEST(SluiceExtensionsTest, ExtensionsDecodeSluiceBytes) {
  DescriptorPool pool;
  std::map<std::string, std::set<std::string>> upstream;  // file -> messages (one per extended message)
  for (const FieldDescriptor* f : SluiceFieldsInUpstreamMessages())
    upstream["protos/" + f->containing_type()->file()->name()].insert(f->containing_type()->name());
  for (const auto& [path, messages] : upstream) {
    google::protobuf::FileDescriptorProto stand_in;
    stand_in.set_name(path);
    stand_in.set_package("perfetto.protos");
    for (const std::string& name : messages) {
      auto* message = stand_in.add_message_type();
      message->set_name(name);
      auto* range = message->add_extension_range();
      range->set_start(kFirstSluiceFieldNumber);
      range->set_end(FieldDescriptor::kMaxNumber + 1);
    }
    ASSERT_NE(pool.BuildFile(stand_in), nullptr) << path;
  }
  const google::protobuf::FileDescriptorSet set = SluiceExtensionSet();
  for (const auto& file : set.file()) ASSERT_NE(pool.BuildFile(file), nullptr) << file.name();

  perfetto::protos::TracePacket packet;
  packet.set_timestamp(5);
  packet.mutable_bpf_stats()->set_dropped(7846);
  packet.mutable_bpf_stats()->add_cpu_stats()->set_cpu(1);
  google::protobuf::DynamicMessageFactory factory(&pool);
  const auto* packet_type = pool.FindMessageTypeByName("perfetto.protos.TracePacket");
  ASSERT_NE(packet_type, nullptr);
  std::unique_ptr<google::protobuf::Message> decoded(factory.GetPrototype(packet_type)->New());
  ASSERT_TRUE(decoded->ParseFromString(packet.SerializeAsString()));
  const FieldDescriptor* ext = pool.FindExtensionByName("sluice.protos.bpf_stats");
  ASSERT_NE(ext, nullptr);
  ASSERT_TRUE(decoded->GetReflection()->HasField(*decoded, ext));
  const google::protobuf::Message& stats = decoded->GetReflection()->GetMessage(*decoded, ext);
  EXPECT_EQ(stats.GetReflection()->GetUInt64(stats, stats.GetDescriptor()->FindFieldByName("dropped")), 7846u);
}

}  // namespace
}  // namespace sluice
