// Unit tests for shm/base/units.h: the one size and the one duration parser
// every binary uses. ParseDurationMs and ParseSizeKb were moved here from
// tests/user/cmd/record_command_test.cc with the parsers.
#include "shm/base/units.h"

#include <string>
#include <utility>

#include <gtest/gtest.h>

namespace sluice {
namespace {

TEST(UnitsTest, ParseDurationMs) {
  const std::pair<const char*, uint32_t> good[] = {
      {"10s", 10000}, {"500ms", 500},     {"2m", 120000}, {"2min", 120000},
      {"1h", 3600000}, {"3", 3000},       {"1.5s", 1500}, {"0", 0},
      {"0.25", 250},  {"4000000s", 4000000000u}};
  for (const auto& [text, ms] : good) {
    auto r = ParseDurationMs(text);
    ASSERT_TRUE(r.ok()) << text << ": " << r.status().message();
    EXPECT_EQ(*r, ms) << text;
  }
  for (const char* bad : {"", "s", "abc", "10x", "10 s", "-1s", "10sec", "5000000s", "2000h"}) {
    auto r = ParseDurationMs(bad);
    EXPECT_FALSE(r.ok()) << "'" << bad << "' parsed as " << (r.ok() ? *r : 0);
    if (!r.ok()) {
      EXPECT_NE(r.status().message().find(bad), std::string::npos)
          << "the error should quote the input: " << r.status().message();
    }
  }
}

TEST(UnitsTest, ParseSizeKb) {
  const std::pair<const char*, uint64_t> good[] = {
      {"64mb", 65536}, {"512kb", 512},     {"1gb", 1048576}, {"4096", 4096},
      {"1MB", 1024},   {"2k", 2},          {"1m", 1024},     {"2G", 2097152},
      {"1.5mb", 1536}, {"1KB", 1}};
  for (const auto& [text, kb] : good) {
    auto r = ParseSizeKb(text);
    ASSERT_TRUE(r.ok()) << text << ": " << r.status().message();
    EXPECT_EQ(*r, kb) << text;
  }
  for (const char* bad : {"", "mb", "0", "0mb", "-5mb", "10tb", "10 mb", "1mib"}) {
    auto r = ParseSizeKb(bad);
    EXPECT_FALSE(r.ok()) << "'" << bad << "' parsed as " << (r.ok() ? *r : 0);
  }
}

// strtod() accepts "nan", "inf" and "1e300"; the parsers do not use it and
// must refuse them too.
TEST(UnitsTest, RejectsNonFiniteAndExponents) {
  for (const char* bad : {"nan", "inf", "nans", "infs", "1e300s", "1e3", "0x10s", "+5s", " 5s"})
    EXPECT_FALSE(ParseDurationMs(bad).ok()) << bad;
  for (const char* bad : {"nan", "inf", "nanmb", "1e300", "1e30gb", "0x10", "+5mb", " 5mb"})
    EXPECT_FALSE(ParseSizeKb(bad).ok()) << bad;
}

TEST(UnitsTest, BytesAndCaseInSizes) {
  EXPECT_EQ(ParseSizeKb("65536b").value_or(0), 64u);
  EXPECT_EQ(ParseSizeKb("33554432B").value_or(0), 32u * 1024);
  EXPECT_EQ(ParseSizeKb("2Gb").value_or(0), 2u * 1024 * 1024);
  EXPECT_EQ(ParseSizeKb("1024gb").value_or(0), 1ull << 30) << "1 TiB is the largest";
  EXPECT_FALSE(ParseSizeKb("1025gb").ok());
  EXPECT_EQ(ParseSizeKb("1.25kb").status().message(), "size '1.25kb' is not a whole number of KiB");
  EXPECT_FALSE(ParseSizeKb("1000b").ok()) << "not whole KiB: an error, not rounded";
  EXPECT_FALSE(ParseSizeKb("0.1mb").ok());
  EXPECT_FALSE(ParseSizeKb("18446744073709551615").ok()) << "2^64-1 (what -1 wraps to)";
  EXPECT_FALSE(ParseSizeKb("99999999999999999999999999gb").ok());
  EXPECT_FALSE(ParseSizeKb("1.").ok());
  EXPECT_FALSE(ParseSizeKb(".5mb").ok());
}

TEST(UnitsTest, DurationsAreExactAndCaseInsensitive) {
  EXPECT_EQ(ParseDurationMs("1.001s").value_or(0), 1001u) << "no floating-point rounding";
  EXPECT_EQ(ParseDurationMs("0.001s").value_or(0), 1u);
  EXPECT_EQ(ParseDurationMs("10S").value_or(0), 10000u);
  EXPECT_EQ(ParseDurationMs("500MS").value_or(0), 500u);
  EXPECT_EQ(ParseDurationMs("1.5m").value_or(0), 90000u);
  EXPECT_FALSE(ParseDurationMs("1.0005s").ok()) << "finer than a millisecond";
  EXPECT_FALSE(ParseDurationMs("99999999999999999999s").ok());
  for (const char* bad : {"1.0005s", "99999999999999999999s", "1.s"}) {
    auto r = ParseDurationMs(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.status().message().find('\n'), std::string::npos) << "one line";
  }
}

}  // namespace
}  // namespace sluice
