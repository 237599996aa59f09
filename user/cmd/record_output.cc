#include "user/cmd/record_output.h"

#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <vector>

#include "service/trace_file_writer.h"
#include "service/tracing_service.h"
#include "shm/base/errno_message.h"
#include "shm/base/file_util.h"

namespace sluice {

StatusOr<std::unique_ptr<RecordOutput>> RecordOutput::Create(const std::string& path) {
  std::string temp;
  if (path == "-") {
    const char* tmpdir = getenv("TMPDIR");
    temp = std::string(tmpdir && *tmpdir ? tmpdir : "/tmp") + "/sluice-stdout-XXXXXX.pftrace";
  } else {
    if (IsDirectory(path)) return Status::Error("cannot write " + path + ": it is a directory; give a file name");
    temp = path + ".recording-XXXXXX";
  }
  std::vector<char> name(temp.begin(), temp.end());
  name.push_back('\0');
  const int suffix = path == "-" ? static_cast<int>(sizeof(".pftrace") - 1) : 0;
  ScopedFd fd(mkostemps(name.data(), suffix, O_CLOEXEC));
  if (!fd.valid()) {
    const int err = errno;
    const std::string dir = std::filesystem::path(temp).parent_path().string();
    return Status::Error("cannot create a file in " + (dir.empty() ? std::string(".") : dir) + " (" +
                         ErrnoMessage(err) + "): " +
                         (path == "-" ? "set TMPDIR to a writable directory" : "check the directory of -o"));
  }
  // mkostemps makes the file 0600; a trace is as readable as any file this
  // process creates (0644 less the umask). The umask is read by setting it
  // back at once: this runs before the recorder starts any thread.
  const mode_t mask = umask(0);
  umask(mask);
  fchmod(fd.get(), 0644 & ~mask);
  return std::unique_ptr<RecordOutput>(new RecordOutput(path, std::string(name.data()), std::move(fd)));
}

StatusOr<std::unique_ptr<RecordOutput>> RecordOutput::Adopt(const std::string& path,
                                                            const std::string& temp_path) {
  if (path != "-" && IsDirectory(path)) return Status::Error("cannot write " + path + ": it is a directory; give a file name");
  ScopedFd fd(open(temp_path.c_str(), O_RDWR | O_CLOEXEC));
  if (!fd.valid())
    return Status::Error("cannot open the session's file " + temp_path + " (" + ErrnoMessage(errno) +
                         "): it was moved or removed");
  auto output = std::unique_ptr<RecordOutput>(new RecordOutput(path, temp_path, std::move(fd)));
  output->adopted_ = true;
  return output;
}

RecordOutput::~RecordOutput() {
  if (!settled_ && !adopted_) unlink(temp_path_.c_str());
}

Status RecordOutput::Commit() {
  Close();
  if (to_stdout()) {
    Status copied = CopyToStdout();
    unlink(temp_path_.c_str());
    settled_ = true;
    return copied;
  }
  if (rename(temp_path_.c_str(), path_.c_str()) != 0) {
    const int err = errno;
    settled_ = true;  // The trace stays where it is, and the error says so.
    return Status::Error("cannot rename " + temp_path_ + " to " + path_ + " (" + ErrnoMessage(err) +
                         "): the trace is in " + temp_path_);
  }
  settled_ = true;
  return Status::Ok();
}

std::string RecordOutput::KeepPartial() {
  Close();
  settled_ = true;
  if (!to_stdout() && !PathExists(path_) && rename(temp_path_.c_str(), path_.c_str()) == 0) return path_;
  return temp_path_;
}

Status RecordOutput::CopyToStdout() {
  ScopedFd in(open(temp_path_.c_str(), O_RDONLY | O_CLOEXEC));
  if (!in.valid()) return Status::Error("cannot reopen " + temp_path_ + " (" + ErrnoMessage(errno) + ")");
  // A reader that went away (`sluice record -o - | head -c 10`) is an error
  // to report, not a signal that kills the recorder before it cleans up.
  signal(SIGPIPE, SIG_IGN);
  std::vector<char> buffer(1 << 20);
  uint64_t copied = 0;
  for (;;) {
    ssize_t n = read(in.get(), buffer.data(), buffer.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Status::Error("cannot read " + temp_path_ + " (" + ErrnoMessage(errno) + ")");
    if (n == 0) return Status::Ok();
    for (ssize_t off = 0; off < n;) {
      ssize_t w = write(STDOUT_FILENO, buffer.data() + off, static_cast<size_t>(n - off));
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0)
        return Status::Error("standard output failed after " + std::to_string(copied) + " bytes (" +
                             ErrnoMessage(w < 0 ? errno : EIO) + "): the reader of -o - went away");
      off += w;
      copied += static_cast<uint64_t>(w);
    }
  }
}

Status ReadBuffersIntoFile(ConsumerEndpoint* consumer, int fd, uint64_t max_file_size_bytes,
                           TraceCompression compression) {
  ScopedFd copy(dup(fd));
  if (!copy.valid()) return Status::Error(std::string("cannot dup the trace file's fd: ") + strerror(errno));
  TraceFileWriter writer(std::move(copy), max_file_size_bytes, compression);
  std::vector<std::string> batch;
  size_t batch_bytes = 0;
  Status written;
  auto write_batch = [&] {
    if (written.ok()) written = writer.WritePackets(batch);
    batch.clear();
    batch_bytes = 0;
  };
  Status read = consumer->ReadBuffers([&](std::string_view packet) {
    batch_bytes += packet.size();
    batch.emplace_back(packet);
    if (batch_bytes >= TracingService::kReadSliceBytes) write_batch();
  });
  write_batch();
  if (written.ok()) written = writer.Flush();
  if (!written.ok()) return written;
  if (!read.ok()) return Status::Error("reading the session's buffers: " + read.message());
  return Status::Ok();
}

}  // namespace sluice
