#include "user/query/storage/arg_set_store.h"

#include <algorithm>
#include <cstring>
#include <functional>

#include "shm/base/varint.h"

namespace sluice {
namespace {

uint64_t ZigZag(int64_t v) { return (static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63); }
int64_t UnZigZag(uint64_t v) { return static_cast<int64_t>(v >> 1) ^ -static_cast<int64_t>(v & 1); }

}  // namespace

std::string_view ArgTypeName(ArgType type) {
  switch (type) {
    case ArgType::kInt: return "int";
    case ArgType::kUint: return "uint";
    case ArgType::kString: return "string";
    case ArgType::kReal: return "real";
    case ArgType::kBool: return "bool";
  }
  return "int";
}

ArgSetStore::ArgSetStore(const StringPool* strings) : strings_(strings), index_(64, 0) {}

std::string_view ArgSetStore::Bytes(uint32_t id) const {
  uint64_t begin = offsets_[id];
  uint64_t end = id + 1 < offsets_.size() ? offsets_[id + 1] : arena_.size();
  return std::string_view(arena_).substr(begin, end - begin);
}

void ArgSetStore::GrowIndex() {
  std::vector<uint64_t> grown(index_.size() * 2, 0);
  const size_t mask = grown.size() - 1;
  for (uint64_t slot : index_) {
    if (slot == 0) continue;
    size_t i = (slot >> 32) & mask;
    while (grown[i] != 0) i = (i + 1) & mask;
    grown[i] = slot;
  }
  index_.swap(grown);
}

uint32_t ArgSetStore::Add(std::vector<Arg>* args, bool sorted) {
  if (args->empty()) return kNoArgSet;
  if (!sorted) std::sort(args->begin(), args->end(), [this](const Arg& a, const Arg& b) {
    return strings_->Get(a.key) < strings_->Get(b.key);
  });
  scratch_.clear();
  AppendVarInt(args->size(), &scratch_);
  for (const Arg& arg : *args) {
    AppendVarInt(arg.key, &scratch_);
    scratch_.push_back(static_cast<char>(arg.type));
    switch (arg.type) {
      case ArgType::kInt: AppendVarInt(ZigZag(arg.int_value), &scratch_); break;
      case ArgType::kUint:
      case ArgType::kBool:
      case ArgType::kString: AppendVarInt(static_cast<uint64_t>(arg.int_value), &scratch_); break;
      case ArgType::kReal: {
        char bytes[8];
        std::memcpy(bytes, &arg.real_value, 8);
        scratch_.append(bytes, 8);
        break;
      }
    }
  }
  // 32 bits of hash per slot, for the first compare; the slot's start too.
  const auto hash = static_cast<uint32_t>(std::hash<std::string_view>()(scratch_));
  const size_t mask = index_.size() - 1;
  size_t i = hash & mask;
  for (; index_[i] != 0; i = (i + 1) & mask) {
    const uint64_t slot = index_[i];
    const auto found = static_cast<uint32_t>(slot) - 1;
    if ((slot >> 32) == hash && Bytes(found) == scratch_) return found;
  }
  auto id = static_cast<uint32_t>(offsets_.size());
  offsets_.push_back(arena_.size());
  first_row_.push_back(rows_);
  arena_ += scratch_;
  rows_ += args->size();
  index_[i] = (uint64_t{hash} << 32) | (uint64_t{id} + 1);
  if (++index_used_ * 4 > index_.size() * 3) GrowIndex();
  return id;
}

void ArgSetStore::Decode(uint32_t id, std::vector<Arg>* out, uint64_t* first_row) const {
  out->clear();
  if (id >= offsets_.size()) return;
  *first_row = first_row_[id];
  std::string_view bytes = Bytes(id);
  size_t pos = 0;
  uint64_t count = 0;
  ReadVarInt(bytes, &pos, &count);
  out->resize(count);
  for (Arg& arg : *out) {
    uint64_t key = 0, value = 0;
    ReadVarInt(bytes, &pos, &key);
    arg.key = static_cast<StringId>(key);
    arg.type = static_cast<ArgType>(bytes[pos++]);
    if (arg.type == ArgType::kReal) {
      std::memcpy(&arg.real_value, bytes.data() + pos, 8);
      pos += 8;
      continue;
    }
    ReadVarInt(bytes, &pos, &value);
    arg.int_value = arg.type == ArgType::kInt ? UnZigZag(value) : static_cast<int64_t>(value);
  }
}

uint32_t ArgSetStore::SetOfRow(uint64_t row) const {
  auto it = std::upper_bound(first_row_.begin(), first_row_.end(), row);
  return static_cast<uint32_t>(it - first_row_.begin()) - 1;
}

uint64_t ArgSetStore::memory_bytes() const {
  return arena_.capacity() + (offsets_.capacity() + first_row_.capacity()) * 8 +
         index_.capacity() * 8;
}

}  // namespace sluice
