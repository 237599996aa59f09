#include "user/trace/trace_file_reader.h"

#include <zlib.h>
#include <zstd.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>

#include "perfetto/trace/trace_packet.pb.h"

namespace sluice {
namespace {

constexpr uint64_t kMaxInflatedBytes = 256ull << 20;

StatusOr<std::string> Inflate(std::string_view in) {
  z_stream zs{};
  if (inflateInit(&zs) != Z_OK) return Status::Error("zlib inflateInit failed");
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  zs.avail_in = static_cast<uInt>(in.size());
  std::string out;
  char buf[65536];
  int rc = Z_OK;
  while (rc != Z_STREAM_END) {
    zs.next_out = reinterpret_cast<Bytef*>(buf);
    zs.avail_out = sizeof(buf);
    rc = inflate(&zs, Z_NO_FLUSH);
    if (rc != Z_OK && rc != Z_STREAM_END) {
      inflateEnd(&zs);
      return Status::Error("compressed_packets do not inflate (zlib error " + std::to_string(rc) + ")");
    }
    out.append(buf, sizeof(buf) - zs.avail_out);
    if (out.size() > kMaxInflatedBytes) {
      inflateEnd(&zs);
      return Status::Error("compressed_packets inflate to more than 256 MiB");
    }
    if (rc != Z_STREAM_END && zs.avail_in == 0 && zs.avail_out != 0) {
      inflateEnd(&zs);
      return Status::Error("compressed_packets are cut off");
    }
  }
  inflateEnd(&zs);
  return out;
}

// Decompresses the one zstd frame of a zstd_compressed_packets field.
StatusOr<std::string> DecompressZstd(std::string_view in) {
  // One context per thread, reset for each frame: its window is allocated
  // once, not per container.
  static thread_local std::unique_ptr<ZSTD_DCtx, size_t (*)(ZSTD_DCtx*)> dctx(ZSTD_createDCtx(),
                                                                              ZSTD_freeDCtx);
  if (!dctx) return Status::Error("cannot allocate a zstd context (out of memory)");
  ZSTD_DCtx_reset(dctx.get(), ZSTD_reset_session_only);
  std::string out;
  ZSTD_inBuffer input{in.data(), in.size(), 0};
  size_t used = 0;
  for (;;) {
    if (used == out.size()) {
      if (out.size() > kMaxInflatedBytes)
        return Status::Error("zstd_compressed_packets decompress to more than 256 MiB");
      out.resize(std::min<size_t>(std::max<size_t>(2 * out.size(), 4 * in.size() + 4096), kMaxInflatedBytes + 1));
    }
    ZSTD_outBuffer output{out.data(), out.size(), used};
    const size_t rc = ZSTD_decompressStream(dctx.get(), &output, &input);
    used = output.pos;
    if (ZSTD_isError(rc))
      return Status::Error(std::string("zstd_compressed_packets do not decompress (zstd: ") +
                           ZSTD_getErrorName(rc) + ")");
    if (rc == 0) break;  // The frame is whole.
    if (input.pos == input.size && used < out.size())
      return Status::Error("zstd_compressed_packets are cut off (the zstd frame ends after " +
                           std::to_string(in.size()) + " bytes, before its end)");
  }
  if (used > kMaxInflatedBytes) return Status::Error("zstd_compressed_packets decompress to more than 256 MiB");
  // A container holds exactly one frame (upstream's trace processor refuses
  // anything after it).
  if (input.pos != input.size)
    return Status::Error("zstd_compressed_packets hold " + std::to_string(input.size - input.pos) +
                         " bytes after their zstd frame");
  out.resize(used);
  return out;
}

// Reads the records in `bytes`. At top level, a record cut off at the end of
// `bytes` stops the loop: *complete_end says where it starts (the caller
// either has more bytes to add or calls the file truncated there).
// `file_offset` is where `bytes` starts in the file.
Status ReadRecords(std::string_view bytes, int depth,
                   const std::function<void(std::string_view)>& on_packet,
                   TraceFileSummary* summary, bool top_level, uint64_t file_offset = 0,
                   size_t* complete_end = nullptr) {
  size_t pos = 0;
  if (complete_end) *complete_end = bytes.size();
  while (pos < bytes.size()) {
    size_t record_start = pos;
    uint8_t tag = static_cast<uint8_t>(bytes[pos++]);
    uint64_t len = 0;
    if (tag != kTracePacketTag) {
      return Status::Error("byte " + std::to_string(file_offset + record_start) +
                           " is not a Trace.packet record (tag 0x" +
                           [&] { char b[8]; snprintf(b, sizeof(b), "%02x", tag); return std::string(b); }() +
                           "): not a Perfetto trace, or corrupt");
    }
    if (!ReadVarInt(bytes, &pos, &len) || len > bytes.size() - pos) {
      if (!top_level) return Status::Error("a compressed container holds a cut-off packet");
      if (complete_end) *complete_end = record_start;
      return Status::Ok();
    }
    std::string_view packet = bytes.substr(pos, len);
    pos += len;
    if (top_level) summary->valid_bytes = file_offset + pos;
    // A compressed container: field 50 (deflate) or 133 (zstd), bytes, the
    // packet's first field as upstream and sluice write it.
    perfetto::protos::TracePacket probe;
    const uint8_t b0 = packet.size() >= 2 ? static_cast<uint8_t>(packet[0]) : 0;
    const uint8_t b1 = packet.size() >= 2 ? static_cast<uint8_t>(packet[1]) : 0;
    const bool deflate_tag = b0 == 0x92 && b1 == 0x03;  // (50 << 3) | 2
    const bool zstd_tag = b0 == 0xaa && b1 == 0x08;     // (133 << 3) | 2
    bool is_container = false;
    if (deflate_tag || zstd_tag) {
      is_container = probe.ParseFromArray(packet.data(), static_cast<int>(packet.size())) &&
                     (deflate_tag ? probe.has_compressed_packets() : probe.has_zstd_compressed_packets());
    }
    if (is_container) {
      const char* field = deflate_tag ? "compressed_packets" : "zstd_compressed_packets";
      if (depth > 0) return Status::Error(std::string("nested ") + field + " are not allowed");
      summary->compressed_containers++;
      auto inflated = deflate_tag ? Inflate(probe.compressed_packets())
                                  : DecompressZstd(probe.zstd_compressed_packets());
      if (!inflated.ok()) return inflated.status();
      SLUICE_RETURN_IF_ERROR(ReadRecords(*inflated, depth + 1, on_packet, summary, false));
      continue;
    }
    summary->packets++;
    on_packet(packet);
  }
  return Status::Ok();
}

}  // namespace

Status ReadTraceBytes(std::string_view bytes,
                      const std::function<void(std::string_view packet)>& on_packet,
                      TraceFileSummary* summary) {
  *summary = TraceFileSummary{};
  summary->bytes = bytes.size();
  size_t complete_end = 0;
  SLUICE_RETURN_IF_ERROR(ReadRecords(bytes, 0, on_packet, summary, true, 0, &complete_end));
  summary->truncated = complete_end < bytes.size();
  return Status::Ok();
}

Status ReadTraceFile(const std::string& path,
                     const std::function<void(std::string_view packet)>& on_packet,
                     TraceFileSummary* summary) {
  // Read in windows of kWindowBytes with read(2): memory stays bounded for
  // traces of any size (`sluice query` on a multi-GB trace), and a record
  // cut by the window's end moves to the front of the next one. Not mmap: a
  // file truncated by someone else while mapped would kill us with SIGBUS.
  // Small, so that the window stays in the CPU's cache between the copy in
  // and the scan, and its fresh pages are few: every first touch of a page
  // is a fault, and at 8 MiB those faults cost more than scanning the 57 MB
  // trace they were read for (the summary `sluice record` prints:
  // docs/PERFORMANCE.md, "Record"). A record larger than this grows it.
  constexpr size_t kWindowBytes = 256u << 10;
  constexpr size_t kMaxRecordBytes = 256u << 20;
  *summary = TraceFileSummary{};
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return Status::Error("cannot open trace file " + path + ": " + strerror(errno) + ": check the path");
  // Not std::string: resizing one zero-fills it, a pass for nothing.
  size_t capacity = kWindowBytes;
  auto buffer = std::make_unique_for_overwrite<char[]>(capacity);
  size_t length = 0;        // Bytes in buffer, from file offset `offset`.
  uint64_t offset = 0;
  bool eof = false;
  Status status;
  while (!eof) {
    if (length == capacity) {  // One record larger than the window.
      // No packet sluice or Perfetto writes comes near this: a corrupt
      // length. The file is valid up to here; reading on would only hold
      // the rest of a huge file in memory.
      if (capacity >= kMaxRecordBytes) break;
      auto bigger = std::make_unique_for_overwrite<char[]>(capacity * 2);
      memcpy(bigger.get(), buffer.get(), length);
      buffer = std::move(bigger);
      capacity *= 2;
    }
    ssize_t n = read(fd, buffer.get() + length, capacity - length);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      std::string why = strerror(errno);
      close(fd);
      return Status::Error("cannot read trace file " + path + ": " + why);
    }
    eof = n == 0;
    length += static_cast<size_t>(n);
    summary->bytes += static_cast<uint64_t>(n);
    if (!eof && length < capacity) continue;  // Fill the window first.
    size_t complete_end = 0;
    status = ReadRecords(std::string_view(buffer.get(), length), 0, on_packet, summary, true,
                         offset, &complete_end);
    if (!status.ok()) break;
    memmove(buffer.get(), buffer.get() + complete_end, length - complete_end);
    length -= complete_end;
    offset += complete_end;
  }
  // Reading stops early at a corrupt record length: the file's size is
  // still what it is (a regular file's; a pipe's is what was read).
  struct stat st {};
  if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) summary->bytes = static_cast<uint64_t>(st.st_size);
  close(fd);
  if (!status.ok()) return Status::Error(path + ": " + status.message());
  summary->truncated = length > 0 || summary->valid_bytes < summary->bytes;
  return Status::Ok();
}

StatusOr<std::string> CompressPacketRecords(std::string_view records) {
  uLongf bound = compressBound(static_cast<uLong>(records.size()));
  std::string deflated(bound, '\0');
  if (compress2(reinterpret_cast<Bytef*>(deflated.data()), &bound,
                reinterpret_cast<const Bytef*>(records.data()), static_cast<uLong>(records.size()),
                Z_DEFAULT_COMPRESSION) != Z_OK)
    return Status::Error("zlib compression failed");
  deflated.resize(bound);
  perfetto::protos::TracePacket container;
  container.set_compressed_packets(deflated);
  std::string out;
  AppendTracePacketRecord(container.SerializeAsString(), &out);
  return out;
}

}  // namespace sluice
