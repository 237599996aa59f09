#include "shm/trace_writer.h"

namespace sluice {

ProtoWriter* HeapTraceWriter::BeginPacket() {
  heap_.Release();
  if (first_packet_) {
    heap_->WriteVarInt(kTracePacketFirstPacketOnSequenceField, 1);
    first_packet_ = false;
  }
  return heap_.writer();
}

void HeapTraceWriter::EndPacket() { packets_.push_back(heap_.Release()); }

}  // namespace sluice
