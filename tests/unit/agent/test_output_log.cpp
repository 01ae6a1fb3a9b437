// output.log records: layout on disk, paging by bytes, torn last records ignored, and which
// offsets an attach may start from.
#define BOOST_TEST_MODULE output_log
#include <boost/test/unit_test.hpp>

#include <fcntl.h>
#include <unistd.h>

#include "remote-runtime/agent/run/output_log.hpp"
#include "tests/support/temp_dir.hpp"

using namespace ferry::agent::run;

namespace {

struct LogFile {
  ferry::test::TempDir dir{"ferry-outlog"};
  int fd = ::open((dir.path() / "output.log").c_str(), O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  ~LogFile() { ::close(fd); }
  void raw(std::string_view bytes) { BOOST_REQUIRE(::write(fd, bytes.data(), bytes.size()) == static_cast<ssize_t>(bytes.size())); }
};

}  // namespace

BOOST_AUTO_TEST_CASE(record_layout_is_stream_then_u32_le_length) {
  std::string r = encode_record(kStderr, std::string(258, 'x'));
  BOOST_REQUIRE(r.size() == 263u);
  BOOST_TEST(r[0] == 2);
  BOOST_TEST(static_cast<unsigned char>(r[1]) == 2u);  // 258 = 0x0102, little-endian
  BOOST_TEST(static_cast<unsigned char>(r[2]) == 1u);
  BOOST_TEST(r[3] == 0);
  BOOST_TEST(r[4] == 0);
}

BOOST_AUTO_TEST_CASE(reads_records_in_pages_and_keeps_offsets) {
  LogFile log;
  BOOST_REQUIRE(append_record(log.fd, kStdout, "hello"));
  BOOST_REQUIRE(append_record(log.fd, kStderr, std::string("\0\xff", 2)));
  BOOST_REQUIRE(append_record(log.fd, kStdout, ""));
  BOOST_REQUIRE(append_record(log.fd, kStdout, "world!"));
  auto all = read_records(log.fd, 0, 1 << 20);
  BOOST_REQUIRE(all.has_value());
  BOOST_REQUIRE(all->records.size() == 4u);
  BOOST_TEST(all->records[0].offset == 0u);
  BOOST_TEST(all->records[1].offset == 10u);
  BOOST_TEST((all->records[1].data == std::string("\0\xff", 2)));
  BOOST_TEST(all->records[1].stream == kStderr);
  BOOST_TEST(all->records[2].offset == 17u);
  BOOST_TEST(all->records[3].offset == 22u);
  BOOST_TEST(all->next == 33u);
  // A page of 6 bytes: "hello" (5) fits, the next record would make 7.
  auto page = read_records(log.fd, 0, 6);
  BOOST_REQUIRE(page.has_value());
  BOOST_TEST(page->records.size() == 1u);
  BOOST_TEST(page->next == 10u);
  // A page smaller than the first record still returns it, so readers always progress.
  auto tiny = read_records(log.fd, 22, 1);
  BOOST_REQUIRE(tiny.has_value());
  BOOST_TEST(tiny->records.size() == 1u);
  BOOST_TEST(tiny->records[0].data == "world!");
  auto end = read_records(log.fd, 33, 100);
  BOOST_REQUIRE(end.has_value());
  BOOST_TEST(end->records.empty());
  BOOST_TEST(end->next == 33u);
}

BOOST_AUTO_TEST_CASE(a_torn_last_record_is_invisible_until_complete) {
  LogFile log;
  BOOST_REQUIRE(append_record(log.fd, kStdout, "one"));
  std::string second = encode_record(kStdout, "two-two");
  log.raw(second.substr(0, 3));  // half a header
  auto r = read_records(log.fd, 0, 100);
  BOOST_REQUIRE(r.has_value());
  BOOST_TEST(r->records.size() == 1u);
  BOOST_TEST(r->next == 8u);
  log.raw(second.substr(3, 5));  // header done, data partial
  BOOST_TEST(read_records(log.fd, 8, 100)->records.empty());
  BOOST_TEST(!check_offset(log.fd, 20).has_value());
  log.raw(second.substr(8));
  auto done = read_records(log.fd, 8, 100);
  BOOST_REQUIRE(done->records.size() == 1u);
  BOOST_TEST(done->records[0].data == "two-two");
  BOOST_TEST(check_offset(log.fd, 20).has_value());
}

BOOST_AUTO_TEST_CASE(only_record_boundaries_are_valid_offsets) {
  LogFile log;
  BOOST_REQUIRE(append_record(log.fd, kStdout, "abc"));
  BOOST_REQUIRE(append_record(log.fd, kStderr, "defg"));
  BOOST_TEST(check_offset(log.fd, 0).has_value());
  BOOST_TEST(check_offset(log.fd, 8).has_value());
  BOOST_TEST(check_offset(log.fd, 17).has_value());  // the end: attach and wait for more
  for (std::uint64_t bad : {1u, 5u, 7u, 9u, 16u}) {
    auto r = check_offset(log.fd, bad);
    BOOST_TEST(!r.has_value(), bad);
    BOOST_TEST(r.error().find("not a record boundary") != std::string::npos, r.error());
  }
  auto past = check_offset(log.fd, 18);
  BOOST_REQUIRE(!past.has_value());
  BOOST_TEST(past.error().find("beyond the end") != std::string::npos, past.error());
}

BOOST_AUTO_TEST_CASE(a_corrupt_header_is_an_error_not_a_huge_allocation) {
  LogFile log;
  log.raw(std::string("\x01\xff\xff\xff\x7f", 5));  // 2 GiB length
  auto r = read_records(log.fd, 0, 100);
  BOOST_REQUIRE(!r.has_value());
  BOOST_TEST(r.error().find("corrupt") != std::string::npos);
  LogFile other;
  other.raw(std::string("\x07\x01\x00\x00\x00x", 6));  // stream 7
  BOOST_TEST(!read_records(other.fd, 0, 100).has_value());
}

BOOST_AUTO_TEST_CASE(the_walk_can_start_from_a_known_boundary_and_crosses_blocks) {
  LogFile log;
  // ~3 MiB of small records: the header walk crosses its 1 MiB read blocks.
  std::vector<std::uint64_t> offsets;
  std::uint64_t at = 0;
  for (int i = 0; i < 40000; ++i) {
    std::string data(static_cast<std::size_t>(i % 150), static_cast<char>('a' + i % 26));
    BOOST_REQUIRE(append_record(log.fd, i % 3 ? kStdout : kStderr, data));
    offsets.push_back(at);
    at += kRecordHeaderBytes + data.size();
  }
  BOOST_TEST(check_offset(log.fd, at).has_value());
  BOOST_TEST(check_offset(log.fd, offsets[39999]).has_value());
  BOOST_TEST(check_offset(log.fd, offsets[30000], offsets[12345]).has_value());
  BOOST_TEST(!check_offset(log.fd, offsets[30000] + 1, offsets[12345]).has_value());
  BOOST_TEST(!check_offset(log.fd, at + 1).has_value());
}
