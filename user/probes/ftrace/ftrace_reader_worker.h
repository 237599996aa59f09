// FtraceReaderWorker: the worker thread of one CPU's ftrace reader, which
// reads the CPU's ring buffer and encodes it straight into the CPU's
// TraceWriter: one stage, no hand-off to another thread. The two ways of
// reading are subclasses (they implement ReadAvailable()):
//   - FtraceMappedCpuReader: in place, through the buffer's memory mapping
//     (Linux 6.10+);
//   - FtraceCpuReader: splice(2) (read(2) for partial pages), every kernel.
//
//   worker thread:  poll(trace_pipe_raw: buffer_percent full;
//                        eventfd: Kick() for a stop, a pause;
//                        timeout: the drain deadline)
//                   ─▶ ReadAvailable(): pages ─▶ encoder ─▶ writer
//                   ─▶ FinishBundle, publish the encoder's stats
//   Flush(), on the thread that asks for it (the producer's):
//                   ReadAvailable() until caught up, partial page included
//                   ─▶ FinishBundle ─▶ writer flush
//
// Wake-ups follow the data: the kernel wakes poll() once the buffer is
// buffer_percent full (its watermark); a stop or a pause wakes the eventfd;
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
// A flush reads on the thread that asks for it, not on the worker. At rest
// a flush round is most of what a recorder does (a streamed file is flushed
// at least every --file-lag), and handing it to each worker cost every
// worker a wake-up, and the asking thread one more for their answers: about
// a dozen thread wake-ups a round on 2 CPUs, ~1.3 ms of CPU
// (docs/PERFORMANCE.md, "Sluice at rest"). A worker asleep in poll() costs
// nothing while another thread reads its CPU. Upstream's traced_probes
// reads every CPU from one thread on a flush too.
//
// Ownership: read_mutex_. The kernel file or mapping, the encoder, the
// writer (not thread-safe) and the reader's bookkeeping are used only under
// it: by the worker for each batch (it lets go only to wait, in poll()), by
// Flush() from the asking thread, and by the caller after StopThread(). The
// worker publishes the encoder's stats after every batch, and Flush() after
// its own (encoder_stats(), AtomicStats), so that other threads never read
// the encoder itself.
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
// and count) then applies. Asking may cost a scan of the
// SMB's page headers (TraceWriter::RoomBytes; SharedMemoryArbiter::FreeBytes
// says when), so a reader asks for kRoomCreditBytes at a time and spends
// the answer as credit.
//
// A flush reads until the kernel has nothing left, partial page included
// (or kMostRingsPerFlush rings' worth, against a writer that never lets it
// catch up), ends the bundle and flushes the writer; it returns when all of
// that is done, so its caller needs no handshake.
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

// Wakes the drain thread (a near miss, a request of the data source's API).
// Notify() takes a mutex, so workers call it at most once per trace (their
// first near miss), never per page.
class DrainSignal {
 public:
  void Notify();
  // Waits until Notify() or `timeout_ms`; returns true if notified. Clears
  // the notification.
  bool WaitFor(uint32_t timeout_ms);

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  bool pending_ = false;
};

struct FtraceReaderWakeStats {
  uint64_t wakeups = 0;            // Worker wake-ups.
  uint64_t watermark_wakeups = 0;  // Of those, by trace_pipe_raw (the kernel).
  uint64_t smb_full_waits = 0;     // Times the reader stopped taking pages: no room in the SMB.
  uint64_t smb_full_wait_us = 0;   // Time spent so, in microseconds.
  // The most pages taken in one wake-up until caught up, or in one flush
  // (a maximum, not a sum: FtraceDataSource keeps the maximum across
  // readers of a CPU).
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
  // Wakes and joins the worker. Idempotent.
  void StopThread();
  // On the calling thread, with the worker running or not: reads everything
  // the kernel holds, partial page included (waiting for room in the SMB as
  // FlushRoomWait allows), ends the bundle and flushes the writer. While
  // paused (tests) it only flushes the writer. One caller at a time (the
  // data source's API thread, or the drain thread for a CPU going offline,
  // which FtraceDataSource keeps apart). `room_wait`: one patience shared by
  // the CPUs of a round, so that a service that frees nothing costs a round
  // one patience, not one per CPU; null: this flush's own.
  void Flush(FlushRoomWait* room_wait = nullptr);

  uint32_t cpu() const { return cpu_; }

  // A flush ends after this many rings' worth (kMore) even if the kernel has
  // more: all it held when the flush began is read by then, and a writer as
  // fast as the reader cannot keep it going.
  static constexpr int kMostRingsPerFlush = 2;
  // Tests: how long a flush waits for room (FlushRoomWait). Before the
  // first Flush().
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
  // Tests: while paused, nothing is read (a flush only flushes the writer).
  void SetPaused(bool paused) { control_.SetPaused(paused); }

  // The encoder's stats as of the last batch (the worker's or a flush's).
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
  // stop waiting. Called with read_mutex_ held.
  virtual ReadResult ReadAvailable(bool flushing, bool* got_data) = 0;

  FtracePageEncoder* encoder() const { return encoder_; }
  TraceWriter* writer() const { return writer_; }
  // For ReadAvailable() (read_mutex_ held), before it takes `raw_bytes` from the kernel: true
  // if it must not (no room in the writer). Takes the
  // room out of the credit, asking the writer for more when it runs short.
  // With less room than `raw_bytes` but at least a page's worth it goes on
  // (a small SMB may never have room for a whole batch; the writer's policy
  // covers the rest).
  bool NoRoomFor(uint32_t raw_bytes);

 private:
  void WorkerLoop();
  // Flush()'s reads (read_mutex_ held): until the kernel has nothing left,
  // waiting for room as FlushRoomWait allows.
  void ReadAllForFlush(FlushRoomWait* room_wait);
  // The worker's wait (`lock` on read_mutex_, let go while it waits).
  // Returns true if trace_pipe_raw was polled and reported readable.
  // `timeout_ms` -1: until woken.
  bool WaitForWake(std::unique_lock<std::mutex>& lock, bool include_trace_fd, int timeout_ms = -1);
  // The worker, after kNoRoom: waits kRoomRetryMs or for a kick (letting go
  // of `lock`), and counts it.
  void WaitForRoom(std::unique_lock<std::mutex>& lock);
  // Counts a wait for room that `waited` long; `first`: the first of a run.
  void CountRoomWait(bool first, std::chrono::steady_clock::duration waited);
  void PublishEncoderStats() { encoder_stats_.Store(encoder_->stats()); }
  // Before the worker waits, and at a flush's end: the pages of this
  // wake-up (or flush) against the most so far.
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
  // Counted under read_mutex_ (its holder is the owner AtomicStats asks
  // for): by the worker, and by a flush's waits for room and its catch-up.
  AtomicStats<FtraceReaderWakeStats> wake_stats_;
  // Held by whoever reads the kernel buffer or uses the encoder or the
  // writer: the worker for a batch, Flush(), and the subclasses'
  // ReadAvailable() through them. The worker lets go of it only to wait.
  // It is uncontended but for a flush that meets a worker's batch: one lock
  // per batch, not per page.
  std::mutex read_mutex_;
  // Under read_mutex_:
  bool waiting_for_room_ = false;  // The worker counts a run of waits once.
  bool ignore_room_ = false;       // NoRoomFor says there is room: a flush past its patience.
  // Pages taken in one catch-up, under read_mutex_: since the worker last
  // waited, or by one flush (which ends its own: Flush()).
  uint64_t catch_up_pages_ = 0;
  uint64_t near_miss_pages_ = 0;   // set_near_miss_pages(); 0 once notified.
  uint64_t room_credit_ = 0;       // Raw bytes the writer had room for at the last ask.
};

}  // namespace sluice

#endif  // SLUICE_USER_PROBES_FTRACE_FTRACE_READER_WORKER_H_
