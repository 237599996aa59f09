#include "service/sluice_extensions.h"

#include <algorithm>
#include <deque>
#include <set>
#include <string>

#include "perfetto/trace/trace_packet.pb.h"

namespace sluice {
namespace {

using google::protobuf::Descriptor;
using google::protobuf::FieldDescriptor;
using google::protobuf::FieldDescriptorProto;
using google::protobuf::FileDescriptor;
using google::protobuf::FileDescriptorProto;
using google::protobuf::FileDescriptorSet;

constexpr char kUpstreamPackage[] = "perfetto.protos";
constexpr char kSluicePackage[] = "sluice.protos";

bool IsUpstreamFile(const FileDescriptor* file) { return file->package() == kUpstreamPackage; }

// How a set meant for upstream's readers names a file: upstream keeps its
// .proto files under protos/, sluice's mirror compiles the same paths with
// -Iprotos.
std::string PathInSet(const FileDescriptor* file) {
  return IsUpstreamFile(file) ? "protos/" + file->name() : file->name();
}

// Appends |file| to |set| after its imports, each file once; upstream's
// files stay out (their readers have them).
void AddFileAfterImports(const FileDescriptor* file, std::set<const FileDescriptor*>* added,
                         FileDescriptorSet* set) {
  if (IsUpstreamFile(file) || !added->insert(file).second) return;
  for (int i = 0; i < file->dependency_count(); i++) AddFileAfterImports(file->dependency(i), added, set);
  FileDescriptorProto* proto = set->add_file();
  file->CopyTo(proto);
  for (int i = 0; i < file->dependency_count(); i++) proto->set_dependency(i, PathInSet(file->dependency(i)));
}

const FileDescriptor* TypeFile(const FieldDescriptor* field) {
  if (field->message_type()) return field->message_type()->file();
  if (field->enum_type()) return field->enum_type()->file();
  return nullptr;
}

}  // namespace

std::vector<const FieldDescriptor*> SluiceFieldsInUpstreamMessages() {
  std::vector<const FieldDescriptor*> found;
  std::set<const Descriptor*> seen;
  std::deque<const Descriptor*> todo{perfetto::protos::TracePacket::descriptor()};
  while (!todo.empty()) {
    const Descriptor* message = todo.front();
    todo.pop_front();
    if (!seen.insert(message).second) continue;
    for (int i = 0; i < message->field_count(); i++) {
      const FieldDescriptor* field = message->field(i);
      if (IsUpstreamFile(message->file()) && field->number() >= kFirstSluiceFieldNumber)
        found.push_back(field);
      if (field->message_type()) todo.push_back(field->message_type());
    }
  }
  std::sort(found.begin(), found.end(), [](const FieldDescriptor* a, const FieldDescriptor* b) {
    if (a->containing_type() != b->containing_type())
      return a->containing_type()->full_name() < b->containing_type()->full_name();
    return a->number() < b->number();
  });
  return found;
}

FileDescriptorSet SluiceExtensionSet() {
  const std::vector<const FieldDescriptor*> fields = SluiceFieldsInUpstreamMessages();
  FileDescriptorSet set;
  std::set<const FileDescriptor*> added;
  std::set<std::string> imports;
  for (const FieldDescriptor* field : fields) {
    imports.insert(PathInSet(field->containing_type()->file()));
    if (const FileDescriptor* file = TypeFile(field)) {
      AddFileAfterImports(file, &added, &set);
      imports.insert(PathInSet(file));
    }
  }
  FileDescriptorProto* extensions = set.add_file();
  extensions->set_name(kSluiceExtensionsFileName);
  extensions->set_package(kSluicePackage);
  for (const std::string& path : imports) extensions->add_dependency(path);
  for (const FieldDescriptor* field : fields) {
    FieldDescriptorProto* extension = extensions->add_extension();
    field->CopyTo(extension);
    // A member of the extendee's oneof in sluice's mirror; an extension
    // belongs to no oneof.
    extension->clear_oneof_index();
    extension->clear_json_name();
    extension->set_extendee("." + field->containing_type()->full_name());
  }
  return set;
}

}  // namespace sluice
