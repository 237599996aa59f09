// Tests of service/trace_file_rotation.h on a real directory: names, the
// sequence number going on from files already there, --keep, and refusals.
#include "service/trace_file_rotation.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <set>
#include <string>

#include "gtest/gtest.h"

namespace sluice {
namespace {

class TraceFileRotationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/sluice-rotation-test-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  ScopedFd OpenDir() const { return ScopedFd(open(dir_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC)); }
  std::set<std::string> Files() const {
    std::set<std::string> names;
    for (const auto& e : std::filesystem::directory_iterator(dir_)) names.insert(e.path().filename().string());
    return names;
  }
  static FileRotationOptions Options(uint32_t keep = 0) {
    FileRotationOptions o;
    o.max_bytes = 1 << 20;
    o.keep = keep;
    o.stem = "host";
    o.extension = ".pftrace";
    return o;
  }
  void Touch(const std::string& name) const {
    ScopedFd fd(open((dir_ + "/" + name).c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644));
    ASSERT_TRUE(fd.valid());
  }

  std::string dir_;
};

TEST_F(TraceFileRotationTest, FilesAreWrittenAsRecordingAndRenamedWhenFinished) {
  auto rotation = TraceFileRotation::Create(OpenDir(), Options(), static_cast<uid_t>(-1), static_cast<gid_t>(-1));
  ASSERT_TRUE(rotation.ok()) << rotation.status().message();
  std::string first, second;
  ASSERT_TRUE(rotation->OpenNext(&first).ok());
  EXPECT_EQ(first, "host.000001.pftrace.recording");
  ASSERT_TRUE(rotation->OpenNext(&second).ok());
  EXPECT_EQ(second, "host.000002.pftrace.recording");
  EXPECT_EQ(Files(), (std::set<std::string>{first, second}));
  auto finished = rotation->Finish(first);
  ASSERT_TRUE(finished.ok()) << finished.status().message();
  EXPECT_EQ(*finished, "host.000001.pftrace");
  EXPECT_EQ(Files(), (std::set<std::string>{"host.000001.pftrace", second}));
  EXPECT_EQ(rotation->files_finished(), 1u);
}

TEST_F(TraceFileRotationTest, NumberingGoesOnAfterFilesAlreadyThere) {
  Touch("host.000007.pftrace");
  Touch("host.000009.pftrace.recording");  // A recorder killed mid-file.
  Touch("host.000123.json");               // Not ours: another extension.
  Touch("other.000500.pftrace");
  auto rotation = TraceFileRotation::Create(OpenDir(), Options(), static_cast<uid_t>(-1), static_cast<gid_t>(-1));
  ASSERT_TRUE(rotation.ok());
  std::string name;
  ASSERT_TRUE(rotation->OpenNext(&name).ok());
  EXPECT_EQ(name, "host.000010.pftrace.recording");
}

TEST_F(TraceFileRotationTest, KeepDeletesOnlyThisSessionsOldestFinishedFiles) {
  Touch("host.000001.pftrace");  // An earlier recording's: never deleted.
  auto rotation = TraceFileRotation::Create(OpenDir(), Options(2), static_cast<uid_t>(-1), static_cast<gid_t>(-1));
  ASSERT_TRUE(rotation.ok());
  for (int i = 0; i < 5; i++) {
    std::string name;
    ASSERT_TRUE(rotation->OpenNext(&name).ok());
    ASSERT_TRUE(rotation->Finish(name).ok());
  }
  EXPECT_EQ(Files(), (std::set<std::string>{"host.000001.pftrace", "host.000005.pftrace", "host.000006.pftrace"}));
  EXPECT_EQ(rotation->files_deleted(), 3u);
  EXPECT_EQ(rotation->keep_error(), "");
}

TEST_F(TraceFileRotationTest, AbandonRemovesTheFile) {
  auto rotation = TraceFileRotation::Create(OpenDir(), Options(), static_cast<uid_t>(-1), static_cast<gid_t>(-1));
  ASSERT_TRUE(rotation.ok());
  std::string name;
  ASSERT_TRUE(rotation->OpenNext(&name).ok());
  rotation->Abandon(name);
  EXPECT_TRUE(Files().empty());
}

TEST_F(TraceFileRotationTest, RefusesWhatIsNotADirectoryAndBadStems) {
  Touch("plain");
  ScopedFd file(open((dir_ + "/plain").c_str(), O_RDONLY | O_CLOEXEC));
  auto not_dir = TraceFileRotation::Create(std::move(file), Options(), static_cast<uid_t>(-1), static_cast<gid_t>(-1));
  ASSERT_FALSE(not_dir.ok());
  EXPECT_NE(not_dir.status().message().find("directory"), std::string::npos) << not_dir.status().message();
  FileRotationOptions slash = Options();
  slash.stem = "../escape";
  auto bad = TraceFileRotation::Create(OpenDir(), slash, static_cast<uid_t>(-1), static_cast<gid_t>(-1));
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("'/'"), std::string::npos) << bad.status().message();
}

TEST_F(TraceFileRotationTest, ACreateErrorNamesTheFile) {
  auto rotation = TraceFileRotation::Create(OpenDir(), Options(), static_cast<uid_t>(-1), static_cast<gid_t>(-1));
  ASSERT_TRUE(rotation.ok());
  // A directory in the way of the next name.
  ASSERT_EQ(mkdir((dir_ + "/host.000001.pftrace.recording").c_str(), 0755), 0);
  std::string name;
  auto fd = rotation->OpenNext(&name);
  ASSERT_FALSE(fd.ok());
  EXPECT_NE(fd.status().message().find("host.000001.pftrace.recording"), std::string::npos) << fd.status().message();
}

}  // namespace
}  // namespace sluice
