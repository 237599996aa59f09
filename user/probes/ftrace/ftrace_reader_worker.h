// FtraceReaderWorker: the worker thread of one CPU's ftrace reader, which
// reads the CPU's ring buffer and encodes it straight into the CPU's
// TraceWriter: one stage, no hand-off to another thread. The two ways of
// reading are subclasses (they implement ReadAvailable()):
//   - FtraceMappedCpuReader: in place, through the buffer's memory mapping
//     (Linux 6.10+);
//   - FtraceCpuReader: splice(2) (read(2) for partial pages), every kernel.
//
//   worker thread:  poll(trace_pipe_raw: buffer_percent full;
//                        eventfd: Kick() for a flush, a stop, a pause;
//                        timeout: the drain deadline)
//                   ─▶ ReadAvailable(): pages ─▶ encoder ─▶ writer
//                   ─▶ FinishBundle, publish the encoder's stats
//
// Wake-ups follow the data: the kernel wakes poll() once the buffer is
// buffer_percent full (its watermark); a flush or a stop wakes the eventfd;
// and the drain deadline, drain_period_ms after the worker last read, is
// poll()'s own timeout, so that a buffer that never reaches its watermark is
// read too. The deadline is the worker's own, not a kick from another
// thread: a kick costs that thread a wake-up and the worker an eventfd read
// each period, and a worker that read at its watermark within the period
// would be woken for nothing. A poll that said "readable" but whose read
// found nothing new makes the next wait ignore trace_pipe_raw for kDeafMs
// (or until the deadline or a kick, if sooner), so a watermark of 0
// (readable at any data, while splice hands out only full pages) cannot
// spin, nor can a plain file at its end (tests), which poll() always calls
// readable; after that the worker listens to the kernel again.
//
// Why one stage. The splice reader used to copy pages into a pool that a
// second thread (the data source's drain thread) encoded. On a machine whose
// CPUs the workload saturates, each stage waits for a CPU in turn, and at
// the highest rate the buffer overran unless the worker also polled every
// 4 ms (docs/PERFORMANCE.md). Reading and encoding on one thread, as the
// mapped reader always did, needs one scheduling slot per batch.
//
// Ownership. While the worker runs it alone uses the encoder and the writer
// handed to the constructor; the caller takes them back after StopThread()
// (and may then call ReadRemaining()). The worker flushes the writer itself
// at the end of a flush (the writer is not thread-safe) and publishes the
// encoder's stats after every batch (encoder_stats(), AtomicStats).
//
// A full SMB. Before taking more from the kernel (a splice batch, a
// GET_READER swap) a reader makes sure its writer has room for it, at
// kEncodedBytesPerRawByte (NoRoomFor). Without room it takes nothing and the
// worker waits kRoomRetryMs, or for a kick, and asks again. What the kernel
// cannot hold meanwhile it overwrites and counts, per CPU and in events
// (FtraceCpuStats.overrun), where a reader that went on would have lost
// whole encoded bundles in the SMB, counted only as packets.
// FtraceCpuStats.sluice_smb_full_waits and _ms say it happened. A flush asks
// and waits too, but it must finish: it waits while the service frees room,
// and writes the rest regardless once there was none for a second
// (user/probes/flush_room_wait.h); the writer's own policy (stall, then drop
// and count) then applies. The final read after the worker stopped
// (ReadRemaining) does not ask. Asking costs a scan of the
// SMB's page headers (TraceWriter::RoomBytes), so a reader asks for
// kRoomCreditBytes at a time and spends the answer as credit: one header
// load per few kernel pages.
//
// Flush handshake (FtraceReaderControl): the worker reads until the kernel
// has nothing left, partial page included (or kMostRingsPerFlush rings'
// worth, against a writer that never lets it catch up), ends the bundle, flushes the
// writer, then completes the flush (release: FlushDone()'s acquire then sees
// everything it wrote) and notifies the DrainSignal.
//
// Subclasses call StopThread() first thing in their destructor: the worker
// calls their ReadAvailable() until it is joined.
#ifndef SLUICE_USER_PROBES_FTRACE_FTRACE_READER_WORKER_H_
#define SLUICE_USER_PROBES_FTRACE_FTRACE_READER_WORKER_H_

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>

#include "shm/base/atomic_stats.h"
#include "shm/base/status.h"
#include "shm/trace_writer.h"
#include "user/probes/flush_room_wait.h"
#include "user/probes/ftrace/ftrace_page_encoder.h"
#include "user/probes/ftrace/ftrace_reader_control.h"

namespace sluice {

// Wakes the thread that drives the readers (a flush done, a near miss).
// Notify() takes a mutex, so workers call it at most once per flush and once
// per trace for a near miss, never per page.
//
// A flush of many readers wakes the drain thread once, not once per reader:
// it says how many flushes it waits for (ExpectFlushes) before it asks, and
// each worker's FlushDone() counts down; only the last notifies. At rest a
// flush round otherwise cost the drain thread a wake-up per CPU.
class DrainSignal {
 public:
  void Notify();
  // Waits until Notify() or `timeout_ms`; returns true if notified. Clears
  // the notification.
  bool WaitFor(uint32_t timeout_ms);

  // The drain thread, before it requests `n` flushes.
  void ExpectFlushes(uint32_t n);
  // A worker, after it completed a flush. One that nobody counted on (a
  // count already at 0: a flush that outlived its wait) notifies too.
  void FlushDone();

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  bool pending_ = false;
  // Owner: the drain thread sets it (ExpectFlushes); workers count it down.
  // Relaxed throughout. A worker reads it only after it saw its flush
  // request, and that request's fetch_add (release, FtraceReaderControl::
  // RequestFlush) comes after the store and pairs with the worker's acquire
  // in PendingFlush(), so the worker sees the count. The count-downs are
  // read-modify-writes of one atomic, so exactly one of them sees 1. Nothing
  // else is published through it: the drain thread reads each flush's
  // outcome through its ticket (FlushDone(ticket), acquire).
  std::atomic<uint32_t> flushes_left_{0};
};

struct FtraceReaderWakeStats {
  uint64_t wakeups = 0;            // Worker wake-ups.
  uint64_t watermark_wakeups = 0;  // Of those, by trace_pipe_raw (the kernel).
  uint64_t smb_full_waits = 0;     // Times the reader stopped taking pages: no room in the SMB.
  uint64_t smb_full_wait_us = 0;   // Time spent so, in microseconds.
  // The most pages taken in one wake-up until caught up (a maximum, not a
  // sum: FtraceDataSource keeps the maximum across readers of a CPU).
  uint64_t most_pages_per_wake = 0;
};

class FtraceReaderWorker {
 public:
  virtual ~FtraceReaderWorker();
  FtraceReaderWorker(const FtraceReaderWorker&) = delete;
  FtraceReaderWorker& operator=(const FtraceReaderWorker&) = delete;

  // `drain_period_ms`: the worker reads at least this often, watermark or
  // not; 0: only at the watermark or a Kick().
  void StartThread(uint32_t drain_period_ms = 0);
  // Wakes and joins the worker. Idempotent. Afterwards the caller owns the
  // encoder and writer again.
  void StopThread();
  // With the worker stopped: reads everything the kernel holds, partial page
  // included, and ends the bundle (the caller flushes the writer).
  void ReadRemaining();

  uint32_t cpu() const { return cpu_; }

  // A flush, and the final read, end after this many rings' worth (kMore)
  // even if the kernel has more: all it held when the flush began is read
  // by then, and a writer as fast as the reader cannot keep it going.
  static constexpr int kMostRingsPerFlush = 2;
  // Tests: how long a flush waits for room (FlushRoomWait). Before
  // StartThread().
  void set_flush_room_patience_for_testing(std::chrono::milliseconds patience) {
    flush_room_patience_ = patience;
  }
  // A wake-up that takes at least `pages` (a near miss: the buffer was that
  // full) notifies the DrainSignal, once, so that the drain thread lowers
  // the watermark now rather than at its next housekeeping look; 0: never.
  // Before StartThread().
  void set_near_miss_pages(uint64_t pages) { near_miss_pages_ = pages; }

  // --- Control (any thread). ---
  // Wakes the worker to read what the kernel has.
  void Kick() { control_.Kick(); }
  // Asks the worker to read everything, partial page included, and flush its
  // writer; returns the ticket to pass to FlushDone().
  uint64_t RequestFlush() { return control_.RequestFlush(); }
  bool FlushDone(uint64_t ticket) const { return control_.FlushDone(ticket); }
  // Tests: while paused, the worker reads nothing (flushes are acknowledged
  // without reading).
  void SetPaused(bool paused) { control_.SetPaused(paused); }

  // The encoder's stats as of the worker's last batch (the encoder's own
  // once the worker is stopped and ReadRemaining() ran).
  FtraceParseStats encoder_stats() const { return encoder_stats_.Load(); }
  FtraceReaderWakeStats wake_stats() const { return wake_stats_.Load(); }

 protected:
  enum class ReadResult {
    kCaughtUp,  // The kernel has nothing more (or only a partial page, unless flushing).
    kMore,      // Stopped after a ring's worth: call again.
    kError,     // The read failed (counted by the subclass).
    kNoRoom,    // The writer has no room for another batch: nothing more taken.
  };

  // An event's encoding against its raw record: at most about twice (a
  // 4-byte field becomes a tag and a varint of up to 5). An estimate: a
  // batch that needs more than its share finds the writer's policy.
  static constexpr uint32_t kEncodedBytesPerRawByte = 2;
  // How long a reader without room waits before it asks again. Nothing
  // tells a producer that the service freed chunks, so it asks.
  static constexpr int kRoomRetryMs = 5;
  // How long a worker leaves trace_pipe_raw out of its wait after a kernel
  // wake-up whose read found nothing (so that a poll that keeps saying
  // readable cannot spin it), or after a read error. Short: the buffer goes
  // on filling meanwhile; a default 1.4 MiB buffer takes over 30 ms to fill
  // at the highest rate sluice is measured at (docs/PERFORMANCE.md). It
  // happens about once in a run of the kernel test suite.
  static constexpr int kDeafMs = 10;
  // Encoded bytes a reader asks room for at a time (two splice batches).
  static constexpr uint64_t kRoomCreditBytes = 256 * 1024;

  FtraceReaderWorker(uint32_t cpu, FtracePageEncoder* encoder, TraceWriter* writer, DrainSignal* signal);
  // Subclass Create(): opens the wake-up eventfd.
  Status OpenControl() { return control_.Open(); }
  // The fd poll() waits on for the kernel's watermark; set by the subclass
  // before StartThread().
  void set_trace_fd(int fd) { trace_fd_ = fd; }

  // Reads what the kernel holds and encodes it into encoder()/writer(),
  // without ending the bundle; sets *got_data if it encoded anything new.
  // `flushing`: partial pages too. Stops with kMore after about a ring's
  // worth, so that a writer as fast as the reader cannot keep a flush or a
  // stop waiting.
  virtual ReadResult ReadAvailable(bool flushing, bool* got_data) = 0;

  FtracePageEncoder* encoder() const { return encoder_; }
  TraceWriter* writer() const { return writer_; }
  // For ReadAvailable(), before it takes `raw_bytes` from the kernel: true
  // if it must not (no room in the writer). Takes the
  // room out of the credit, asking the writer for more when it runs short.
  // With less room than `raw_bytes` but at least a page's worth it goes on
  // (a small SMB may never have room for a whole batch; the writer's policy
  // covers the rest).
  bool NoRoomFor(uint32_t raw_bytes);

 private:
  void WorkerLoop();
  // A flush after its first read (`result`; `took`: it took data): reads
  // until the kernel has nothing left, waiting for room as FlushRoomWait
  // allows. Returns the last read's result.
  ReadResult ReadRestOfFlush(ReadResult result, bool took);
  // Returns true if trace_pipe_raw was polled and reported readable.
  // `timeout_ms` -1: until woken.
  bool WaitForWake(bool include_trace_fd, int timeout_ms = -1);
  // After kNoRoom: waits kRoomRetryMs or for a kick, and counts it.
  void WaitForRoom();
  void PublishEncoderStats() { encoder_stats_.Store(encoder_->stats()); }
  // Before the worker waits: the pages of this wake-up against the most so far.
  void EndCatchUp();

  const uint32_t cpu_;
  FtracePageEncoder* const encoder_;
  TraceWriter* const writer_;
  DrainSignal* const signal_;
  int trace_fd_ = -1;  // Owned by the subclass.
  // drain_period_ms, -1 for none. Set before the thread starts, then read
  // by the worker alone.
  int drain_timeout_ms_ = -1;
  std::chrono::milliseconds flush_room_patience_ = FlushRoomWait::kDefaultPatience;
  FtraceReaderControl control_;
  std::thread thread_;

  AtomicStats<FtraceParseStats> encoder_stats_;
  AtomicStats<FtraceReaderWakeStats> wake_stats_;
  // Worker thread only (ReadAvailable runs there, or after the worker
  // stopped, in ReadRemaining).
  bool waiting_for_room_ = false;  // Counts a wait once.
  bool ignore_room_ = false;       // NoRoomFor says there is room: a flush past its patience, the final read.
  uint64_t catch_up_pages_ = 0;    // Pages taken since the worker last waited.
  uint64_t near_miss_pages_ = 0;   // set_near_miss_pages(); 0 once notified.
  uint64_t room_credit_ = 0;       // Raw bytes the writer had room for at the last ask.
};

}  // namespace sluice

#endif  // SLUICE_USER_PROBES_FTRACE_FTRACE_READER_WORKER_H_
