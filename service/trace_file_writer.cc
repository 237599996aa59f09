#include "service/trace_file_writer.h"

#include <errno.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>

#include "shm/base/errno_message.h"
#include "shm/base/string_util.h"
#include "shm/base/varint.h"

namespace sluice {
namespace {

constexpr size_t kBatchBytes = 1 << 20;

// What to do about a failed write, by errno.
const char* WriteErrorHint(int err) {
  switch (err) {
    case ENOSPC:
      return "free space there or write the trace elsewhere";
    case EDQUOT:
      return "raise the disk quota or write the trace elsewhere";
    case EFBIG:
      return "the filesystem (or RLIMIT_FSIZE) allows no larger file; set max_file_size_bytes "
             "or write the trace elsewhere";
    case EIO:
      return "the device failed the write; check it (dmesg) or write the trace elsewhere";
    default:
      return "check the output file and its filesystem";
  }
}

}  // namespace

TraceFileWriter::TraceFileWriter(ScopedFd fd, uint64_t max_size_bytes, TraceCompression compression)
    : fd_(std::move(fd)), max_size_bytes_(max_size_bytes), compression_(compression) {
  if (!compression.enabled()) return;
  auto compressor = PacketCompressor::Create(compression);
  if (compressor.ok()) {
    compressor_ = std::move(compressor.value());
  } else {
    write_errno_ = ENOMEM;
  }
}

TraceFileWriter::~TraceFileWriter() = default;

Status TraceFileWriter::WriteBatch() {
  size_t done = 0;
  while (done < batch_.size()) {
    ssize_t r = write(fd_.get(), batch_.data() + done, batch_.size() - done);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) {
      write_errno_ = r < 0 ? errno : EIO;  // 0 bytes for a non-empty write: treat as EIO.
      break;
    }
    done += static_cast<size_t>(r);
  }
  // Records wholly written before an error stay in the file.
  const size_t whole = static_cast<size_t>(
      std::upper_bound(spans_.begin(), spans_.end(), done,
                       [](size_t d, const Span& span) { return d < span.end; }) -
      spans_.begin());
  const size_t keep = whole ? spans_[whole - 1].end : 0;
  bytes_written_ += keep;
  for (size_t i = 0; i < spans_.size(); i++) {
    if (i < whole) {
      packets_written_ += spans_[i].packets;
    } else {
      packets_lost_ += spans_[i].packets;
      bytes_lost_ += spans_[i].raw_bytes;
    }
  }
  if (failed()) {
    if (compressor_) {
      // The open container's packets will not be written either.
      packets_lost_ += compressor_->packets();
      bytes_lost_ += compressor_->input_bytes();
      compressor_->Discard();
    }
    if (done > keep) {
      // The file ends inside a record: cut it back to the record boundary.
      // The position is just past the partial bytes (also with O_APPEND).
      const off_t end = lseek(fd_.get(), 0, SEEK_CUR);
      const off_t boundary = end - static_cast<off_t>(done - keep);
      if (end < 0 || ftruncate(fd_.get(), boundary) != 0 ||
          lseek(fd_.get(), boundary, SEEK_SET) < 0) {
        cut_errno_ = errno;
        partial_bytes_left_ = done - keep;
      }
    }
  }
  batch_.clear();
  spans_.clear();
  return failed() ? Status::Error(FailureMessage()) : Status::Ok();
}

void TraceFileWriter::CountLost(const std::vector<std::string>& packets, size_t from) {
  for (size_t i = from; i < packets.size(); i++) {
    packets_lost_++;
    bytes_lost_ += TracePacketRecordSize(packets[i].size());
  }
}

uint64_t TraceFileWriter::Limit(bool trailer) const {
  uint64_t limit = max_size_bytes_;
  if (limit != 0 && !trailer && limit >= 4 * kTrailerReserveBytes) limit -= kTrailerReserveBytes;
  return limit;
}

void TraceFileWriter::CloseContainer(uint64_t limit) {
  if (!compressor_ || compressor_->empty()) return;
  const uint64_t packets = compressor_->packets();
  const uint64_t raw = compressor_->input_bytes();
  StatusOr<std::string_view> record = compressor_->Finish();
  if (!record.ok()) {  // Only when out of memory.
    write_errno_ = ENOMEM;
    packets_lost_ += packets;
    bytes_lost_ += raw;
    return;
  }
  if (limit != 0 && bytes_written_ + batch_.size() + record->size() > limit) {
    full_ = true;
    packets_dropped_ += packets;
    return;
  }
  batch_.append(*record);
  spans_.push_back(Span{batch_.size(), packets, raw});
}

Status TraceFileWriter::WritePackets(const std::vector<std::string>& packets, bool trailer) {
  if (failed()) {
    CountLost(packets, 0);
    return Status::Error(FailureMessage());
  }
  const uint64_t limit = Limit(trailer);
  batch_.clear();
  spans_.clear();
  // The trailer goes into a container of its own: what came before stays
  // under the reserve.
  if (trailer) CloseContainer(Limit(false));
  for (size_t i = 0; i < packets.size(); i++) {
    const std::string& packet = packets[i];
    const uint64_t record = TracePacketRecordSize(packet.size());
    if (full_ && !trailer) {
      packets_dropped_++;
      continue;
    }
    if (compressor_) {
      if (!compressor_->Fits(record)) {
        CloseContainer(limit);
        if (full_ && !trailer) {
          packets_dropped_++;
          continue;
        }
      }
      if (!compressor_->Add(packet).ok()) {  // Only when out of memory.
        write_errno_ = ENOMEM;
        packets_lost_++;
        bytes_lost_ += record;
      }
    } else if (limit != 0 && bytes_written_ + batch_.size() + record > limit) {
      full_ = true;
      packets_dropped_++;
      continue;
    } else {
      AppendTracePacketRecord(packet, &batch_);
      spans_.push_back(Span{batch_.size(), 1, record});
    }
    if (batch_.size() >= kBatchBytes || failed()) {
      Status s = WriteBatch();
      if (!s.ok()) {
        CountLost(packets, i + 1);
        return Status::Error(FailureMessage());
      }
    }
  }
  if (trailer) CloseContainer(limit);
  if (!batch_.empty() || failed()) return WriteBatch();
  return Status::Ok();
}

Status TraceFileWriter::Flush() {
  if (failed()) return Status::Error(FailureMessage());
  if (!compressor_ || compressor_->empty()) return Status::Ok();
  batch_.clear();
  spans_.clear();
  CloseContainer(Limit(false));
  return WriteBatch();
}

std::string TraceFileWriter::FailureMessage() const {
  if (!failed()) return "";
  std::string cause = ErrnoMessage(write_errno_);
  if (!cause.empty()) cause[0] = static_cast<char>(std::tolower(static_cast<unsigned char>(cause[0])));
  std::string m(kTraceFileErrorPrefix);
  m += cause + " after " + CountOf(bytes_written_, "byte") + " (" +
       CountOf(packets_written_, "packet") + " written, the file is valid up to there)";
  if (partial_bytes_left_) {
    m += "; " + std::to_string(partial_bytes_left_) +
         " bytes of a partial packet follow (cutting them off failed: " +
         ErrnoMessage(cut_errno_) + ")";
  }
  if (packets_lost_) {
    m += "; " + CountOf(packets_lost_, "packet") + " (" + CountOf(bytes_lost_, "byte") +
         ") after that " + (packets_lost_ == 1 ? "was" : "were") + " not written";
  }
  m += "; ";
  m += WriteErrorHint(write_errno_);
  return m;
}

}  // namespace sluice
