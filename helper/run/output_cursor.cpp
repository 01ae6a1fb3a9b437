// Parsing run/output and run/read, and the offset cursor.
#include "helper/run/output_cursor.hpp"

namespace ferry::run {

namespace {

std::expected<std::uint64_t, std::string> read_offset(const json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_number_integer() || (it->is_number_integer() && !it->is_number_unsigned() && it->get<long long>() < 0))
    return std::unexpected(std::string("missing or negative \"") + key + "\"");
  return it->get<std::uint64_t>();
}

}  // namespace

std::expected<OutputRecord, std::string> parse_output_record(const json& params, const std::string& id) {
  if (!params.is_object()) return std::unexpected("output record: expected an object");
  OutputRecord r;
  if (auto it = params.find("id"); it != params.end() && it->is_string()) r.id = it->get<std::string>();
  else if (!id.empty()) r.id = id;
  else return std::unexpected("output record: missing id");
  auto offset = read_offset(params, "offset");
  if (!offset) return std::unexpected("output record: " + offset.error());
  r.offset = *offset;
  auto s = params.find("stream");
  if (s == params.end() || !s->is_number_integer()) return std::unexpected("output record: missing stream");
  int stream = s->get<int>();
  if (stream != 1 && stream != 2) return std::unexpected("output record: stream " + std::to_string(stream) + " is not 1 or 2");
  r.stream = static_cast<Stream>(stream);
  auto d = params.find("data");
  if (d == params.end()) return std::unexpected("output record: missing data");
  if (d->is_binary()) r.data.assign(d->get_binary().begin(), d->get_binary().end());
  else if (d->is_string()) r.data = d->get<std::string>();
  else return std::unexpected("output record: data is neither bytes nor a string");
  return r;
}

std::expected<ReadResult, std::string> parse_read_result(const json& result, const std::string& id) {
  if (!result.is_object()) return std::unexpected("run/read: expected an object");
  ReadResult out;
  auto next = read_offset(result, "next");
  if (!next) return std::unexpected("run/read: " + next.error());
  out.next = *next;
  if (auto s = result.find("state"); s != result.end() && s->is_string()) out.state = s->get<std::string>();
  auto records = result.find("records");
  if (records == result.end() || !records->is_array()) return std::unexpected("run/read: missing records");
  for (const auto& r : *records) {
    auto rec = parse_output_record(r, id);
    if (!rec) return std::unexpected("run/read: " + rec.error());
    out.records.push_back(std::move(*rec));
  }
  return out;
}

OutputCursor::Verdict OutputCursor::accept(const OutputRecord& record) {
  if (record.offset < next_) return Verdict::duplicate;
  if (record.offset > next_) return Verdict::gap;
  next_ = record.next();
  delivered_ += record.data.size();
  return Verdict::deliver;
}

}  // namespace ferry::run
