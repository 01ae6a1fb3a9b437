// Telemetry: event lines (schema fields, NaN -> null, one flushed line per event), metrics.csv
// rows, the writer's files, and the SVG plot (panels, ticks, legend, NaN, a single point).
#define BOOST_TEST_MODULE telemetry
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>
#include <unistd.h>

#include "remote-runtime/train/svg_plot.hpp"
#include "remote-runtime/train/telemetry.hpp"

using namespace ferry::train;
using nlohmann::json;

namespace {

std::filesystem::path fresh_dir(const std::string& name) {
  const auto dir = std::filesystem::temp_directory_path() / ("ferry_telemetry_" + std::to_string(::getpid())) / name;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

std::vector<std::string> read_lines(const std::filesystem::path& file) {
  std::ifstream in(file);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

std::size_t count(const std::string& haystack, const std::string& needle) {
  std::size_t n = 0;
  for (auto pos = haystack.find(needle); pos != std::string::npos; pos = haystack.find(needle, pos + 1)) ++n;
  return n;
}

// Well-formedness of the generated SVG: every element opened is closed, in order.
bool tags_balanced(const std::string& xml) {
  std::vector<std::string> stack;
  std::size_t pos = 0;
  while ((pos = xml.find('<', pos)) != std::string::npos) {
    const auto end = xml.find('>', pos);
    if (end == std::string::npos) return false;
    const std::string tag = xml.substr(pos + 1, end - pos - 1);
    pos = end + 1;
    if (tag.starts_with("?") || tag.ends_with("/")) continue;
    const std::string name = tag.substr(tag.starts_with("/") ? 1 : 0, tag.find_first_of(" \n") - (tag.starts_with("/") ? 1 : 0));
    if (tag.starts_with("/")) {
      if (stack.empty() || stack.back() != name) return false;
      stack.pop_back();
    } else {
      stack.push_back(name);
    }
  }
  return stack.empty();
}

StepRecord step(std::int64_t s, double loss) {
  StepRecord r;
  r.step = s;
  r.epoch = s / 100;
  r.loss = loss;
  r.lr = 1e-3;
  r.samples_per_s = 1000 + s;
  r.data_wait_fraction = 0.25;
  r.step_time_s = 0.01;
  return r;
}

}  // namespace

BOOST_AUTO_TEST_CASE(event_lines) {
  const std::string line = event_line(to_event(step(10, 2.5)), 1700000000.5);
  BOOST_TEST(line.find('\n') == std::string::npos);
  const json j = json::parse(line);
  BOOST_TEST(j["event"] == "step");
  BOOST_TEST(j["time"].get<double>() == 1700000000.5);
  BOOST_TEST(j["step"] == 10);
  BOOST_TEST(j["loss"].get<double>() == 2.5);
  BOOST_TEST(j["data_wait_fraction"].get<double>() == 0.25);
  BOOST_TEST(!j.contains("gpus"));  // no NVML: fields omitted

  auto with_nan = step(11, std::nan(""));
  GpuSample g;
  g.index = 0;
  g.utilization_percent = 55;
  g.memory_used_bytes = 1 << 30;
  with_nan.gpus.push_back(g);
  const json k = json::parse(event_line(to_event(with_nan), 1));
  BOOST_TEST(k["loss"].is_null());
  BOOST_TEST(k["gpus"][0]["util_percent"].get<double>() == 55);
  BOOST_TEST(!k["gpus"][0].contains("power_w"));

  // A generic event with a nested infinity and invalid UTF-8 still makes one valid JSON line.
  Event e{"config", {{"x", {{"y", std::numeric_limits<double>::infinity()}}}, {"path", std::string("bad\xff")}}};
  const json c = json::parse(event_line(e, 2));
  BOOST_TEST(c["x"]["y"].is_null());
  BOOST_TEST(c["event"] == "config");

  const json d = json::parse(event_line(to_event(DoneRecord{100, 1, "max_steps", "abc123", 4.5, 0.1, std::nullopt}), 3));
  BOOST_TEST(d["param_hash"] == "abc123");
  BOOST_TEST(!d.contains("eval_loss"));
  const json err = json::parse(event_line(to_event(ErrorRecord{"config", "bad", "/optimizer/lr"}), 4));
  BOOST_TEST(err["pointer"] == "/optimizer/lr");
}

BOOST_AUTO_TEST_CASE(writer_streams_lines_and_files) {
  const auto dir = fresh_dir("writer");
  int fds[2];
  BOOST_TEST_REQUIRE(::pipe(fds) == 0);
  std::FILE* out = ::fdopen(fds[1], "w");
  {
    TelemetryWriter w(out);
    BOOST_TEST_REQUIRE(w.open_output(dir, false).has_value());
    w.emit(Event{"start", {{"device", "cpu"}}});
    // Each event is flushed at once: the first line is readable before the writer goes away.
    char buf[512] = {};
    const ssize_t n = ::read(fds[0], buf, sizeof buf - 1);
    BOOST_TEST_REQUIRE(n > 0);
    BOOST_TEST(std::string(buf, static_cast<std::size_t>(n)).ends_with("\n"));
    BOOST_TEST(json::parse(std::string(buf, static_cast<std::size_t>(n) - 1))["event"] == "start");
    w.emit(step(10, 2.0));
    w.emit(step(20, 1.5));
    w.emit(EvalRecord{20, 1.7, 0.5, 1.7});
    w.emit(CheckpointRecord{20, "ckpt/step-20", "periodic"});
    BOOST_TEST_REQUIRE(w.write_plot().has_value());
    BOOST_TEST(w.plot_data().train.size() == 2u);
    BOOST_TEST(w.plot_data().eval.size() == 1u);
  }
  std::fclose(out);
  ::close(fds[0]);
  const auto events = read_lines(dir / "events.jsonl");
  BOOST_TEST_REQUIRE(events.size() == 5u);
  BOOST_TEST(json::parse(events[4])["event"] == "checkpoint");
  const auto csv = read_lines(dir / "metrics.csv");
  BOOST_TEST_REQUIRE(csv.size() == 4u);  // header, two steps, one eval
  BOOST_TEST(csv[0].starts_with("step,epoch,loss,lr,samples_per_s,data_wait_fraction"));
  BOOST_TEST(csv[1].starts_with("10,0,2,0.001,1010,0.25,0.01,,"));
  BOOST_TEST(csv[3].starts_with("20,,,,,,,1.7,0.5,"));
  for (const auto& row : csv) BOOST_TEST(count(row, ",") == std::size(MetricsCsv::kColumns) - 1);
  BOOST_TEST(std::filesystem::file_size(dir / "plot.svg") > 1000u);

  // A resumed run appends and keeps the single header.
  {
    TelemetryWriter w(nullptr);
    BOOST_TEST_REQUIRE(w.open_output(dir, true).has_value());
    w.emit(step(30, 1.2));
  }
  const auto csv2 = read_lines(dir / "metrics.csv");
  BOOST_TEST(csv2.size() == 5u);
  BOOST_TEST(csv2[4].starts_with("30,"));
  BOOST_TEST(read_lines(dir / "events.jsonl").size() == 6u);
}

BOOST_AUTO_TEST_CASE(csv_non_finite_and_gpu_columns) {
  const auto dir = fresh_dir("csv");
  {
    auto csv = MetricsCsv::open(dir / "m.csv", false);
    BOOST_TEST_REQUIRE(csv.has_value());
    auto r = step(1, 0);
    GpuSample g;
    g.utilization_percent = 93;
    g.memory_used_bytes = 123456789;
    g.power_watts = 301.5;
    g.temperature_c = 71;
    r.gpus.push_back(g);
    Event e = to_event(r);
    e.fields["loss"] = std::nan("");  // as a generic producer might send
    csv->add(e);
    csv->add(Event{"advice", {{"message", "x"}}});  // ignored
  }
  const auto rows = read_lines(dir / "m.csv");
  BOOST_TEST_REQUIRE(rows.size() == 2u);
  BOOST_TEST(rows[1] == "1,0,nan,0.001,1001,0.25,0.01,,,93,123456789,301.5,71");
}

BOOST_AUTO_TEST_CASE(svg_two_panels) {
  PlotData d;
  d.title = "mlp <benchmark> & co";
  for (int s = 10; s <= 500; s += 10) d.train.push_back({static_cast<double>(s), 2.3 * std::exp(-s / 200.0), 5000.0 + s});
  d.eval = {{100, 1.4}, {200, 0.9}, {300, 0.6}};
  const std::string svg = render_svg_plot(d);
  BOOST_TEST(svg.starts_with("<?xml"));
  BOOST_TEST(tags_balanced(svg));
  BOOST_TEST(svg.find("mlp &lt;benchmark&gt; &amp; co") != std::string::npos);
  BOOST_TEST(count(svg, "<path ") == 2u);              // train loss + throughput
  BOOST_TEST(count(svg, "<circle ") == 3u + 1u);       // eval points + the legend's dot
  BOOST_TEST(svg.find(">train loss<") != std::string::npos);
  BOOST_TEST(svg.find(">eval loss<") != std::string::npos);
  BOOST_TEST(svg.find("throughput (samples/s)") != std::string::npos);
  BOOST_TEST(svg.find(">loss<") != std::string::npos);
  BOOST_TEST(svg.find(">samples/s<") != std::string::npos);
  BOOST_TEST(count(svg, ">step<") == 2u);
  BOOST_TEST(svg.find(">500<") != std::string::npos);  // an x tick label at the end of the range
  BOOST_TEST(svg.find(">6000<") != std::string::npos);  // throughput axis from 0 to a whole tick
  BOOST_TEST(svg.find("nan") == std::string::npos);
}

BOOST_AUTO_TEST_CASE(svg_non_finite_and_single_point) {
  PlotData d;
  d.train = {{1, std::nan(""), 10}, {2, std::numeric_limits<double>::infinity(), 12}, {3, 0.5, std::nan("")}};
  const std::string svg = render_svg_plot(d);
  BOOST_TEST(tags_balanced(svg));
  BOOST_TEST(svg.find("2 non-finite points omitted") != std::string::npos);
  BOOST_TEST(svg.find("nan") == std::string::npos);
  BOOST_TEST(svg.find("inf") == std::string::npos);

  PlotData one;
  one.train = {{5, 1.25, 100}};
  const std::string s1 = render_svg_plot(one);
  BOOST_TEST(tags_balanced(s1));
  BOOST_TEST(count(s1, "<circle ") == 2u + 1u);  // the lone loss and throughput points + legend dot
  BOOST_TEST(s1.find("nan") == std::string::npos);

  // A diverged step in the middle splits the loss line in two.
  PlotData gap;
  gap.train = {{1, 2.0, 5}, {2, 1.5, 5}, {3, std::nan(""), 5}, {4, 1.0, 5}, {5, 0.8, 5}};
  const std::string sg = render_svg_plot(gap);
  const auto first_path = sg.find("<path d=\"M");
  BOOST_TEST_REQUIRE(first_path != std::string::npos);
  BOOST_TEST(sg.substr(first_path, sg.find('"', first_path + 9) - first_path).find(" M") != std::string::npos);
  BOOST_TEST(sg.find("1 non-finite point omitted") != std::string::npos);

  const std::string empty = render_svg_plot(PlotData{});
  BOOST_TEST(tags_balanced(empty));
  BOOST_TEST(empty.find("no finite loss values yet") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(svg_write_atomic) {
  const auto dir = fresh_dir("svg");
  PlotData d;
  d.train = {{1, 1, 1}, {2, 0.5, 2}};
  BOOST_TEST_REQUIRE(write_svg_plot(dir / "plot.svg", d).has_value());
  BOOST_TEST(!std::filesystem::exists(dir / "plot.svg.tmp"));
  std::ifstream in(dir / "plot.svg");
  std::stringstream text;
  text << in.rdbuf();
  BOOST_TEST(text.str() == render_svg_plot(d));
  BOOST_TEST(!write_svg_plot(dir / "missing" / "plot.svg", d).has_value());
}
