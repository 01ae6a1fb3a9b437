// `ferry cost`: what a job costs on a catalog GPU, an instance type or a price of your own, on
// demand and as spot; `ferry cost catalog`: the offers (built-in + user file + ferry.json rows).
#include <fstream>
#include <iostream>
#include <sstream>
#include <memory>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "helper/cli/commands.hpp"
#include "helper/cli/exit_codes.hpp"
#include "helper/cloud/cost_estimate.hpp"
#include "helper/cloud/gpu_advice.hpp"

namespace ferry::cli {

namespace {

struct CostOptions {
  std::string gpu, instance, provider, hours = "1";
  double price = 0, spot_price = 0;
  bool as_json = false;
};

// The catalog with this project's rows when there is a project; a command run outside any
// project uses the built-in catalog and the user file only.
std::expected<std::vector<cloud::GpuOffer>, std::string> cli_catalog(const GlobalOptions& g,
                                                                     std::optional<deploy::ProjectConfig>& project) {
  auto found = load_cli_project(g);
  if (found) project = std::move(*found);
  else if (g.project_dir) return std::unexpected(found.error());
  return cloud::effective_catalog(project ? project->gpu_catalog : std::vector<cloud::GpuOffer>{});
}

int run_cost(const GlobalOptions& g, const CostOptions& o) {
  std::optional<deploy::ProjectConfig> project;
  auto catalog = cli_catalog(g, project);
  if (!catalog) {
    std::cerr << "ferry cost: " << catalog.error() << "\n";
    return exit_status::kUsage;
  }
  auto hours = cloud::parse_hours(o.hours);
  if (!hours) {
    std::cerr << "ferry cost: --hours " << hours.error() << "\n";
    return exit_status::kUsage;
  }
  cloud::CostQuery q;
  q.hours = *hours;
  if (!o.gpu.empty()) q.gpu = o.gpu;
  if (!o.instance.empty()) q.instance = o.instance;
  if (!o.provider.empty()) q.provider = o.provider;
  if (o.price != 0) q.usd_per_hour = o.price;
  if (o.spot_price != 0) q.spot_usd_per_hour = o.spot_price;
  if (!q.gpu && !q.instance && !q.usd_per_hour && project && project->price) {
    // No selector: the project's host, as ferry.json's price names it.
    auto rate = cloud::host_rate(*project->price, *catalog);
    if (!rate) {
      std::cerr << "ferry cost: ferry.json /price: " << rate.error() << "\n";
      return exit_status::kUsage;
    }
    q.usd_per_hour = rate->on_demand_usd_per_hour;
    q.spot_usd_per_hour = rate->spot_usd_per_hour;
    auto e = cloud::estimate(*rate, q.hours);
    std::cout << (o.as_json ? nlohmann::json::array({cloud::to_json(e)}).dump(2) + "\n" : cloud::format_estimate(e));
    return exit_status::kOk;
  }
  auto estimates = cloud::run_query(q, *catalog);
  if (!estimates) {
    std::cerr << "ferry cost: " << estimates.error()
              << (q.gpu || q.instance || q.usd_per_hour ? "" : " (or set \"price\" in ferry.json)") << "\n";
    return exit_status::kUsage;
  }
  if (o.as_json) {
    nlohmann::json arr = nlohmann::json::array();
    for (const auto& e : *estimates) arr.push_back(cloud::to_json(e));
    std::cout << arr.dump(2) << "\n";
    return exit_status::kOk;
  }
  for (std::size_t i = 0; i < estimates->size(); ++i) std::cout << (i ? "\n" : "") << cloud::format_estimate((*estimates)[i]);
  return exit_status::kOk;
}

int run_cost_catalog(const GlobalOptions& g, const CostOptions& o) {
  std::optional<deploy::ProjectConfig> project;
  auto catalog = cli_catalog(g, project);
  if (!catalog) {
    std::cerr << "ferry cost catalog: " << catalog.error() << "\n";
    return exit_status::kUsage;
  }
  std::vector<const cloud::GpuOffer*> rows;
  if (o.gpu.empty()) for (const auto& r : *catalog) rows.push_back(&r);
  else rows = cloud::find_by_gpu(*catalog, o.gpu);
  if (o.as_json) {
    nlohmann::json arr = nlohmann::json::array();
    for (const auto* r : rows) arr.push_back(cloud::to_json(*r));
    std::cout << arr.dump(2) << "\n";
    return exit_status::kOk;
  }
  std::cout << cloud::format_catalog(rows);
  std::cerr << "Prices are list prices (USD per hour, whole instance) read on the date shown; spot prices move daily.\n"
               "Add or override rows in ferry.json's gpuCatalog or " << cloud::user_catalog_path().string() << ".\n";
  return exit_status::kOk;
}

struct AdviseOptions {
  std::string events;
  double peak_gib = 0, step_time = 0, laptop_gib = 0;
  long long steps = 0;
  int top = 5;
  bool as_json = false;
};

int run_advise(const GlobalOptions& g, const AdviseOptions& o) {
  std::optional<deploy::ProjectConfig> project;
  auto catalog = cli_catalog(g, project);
  if (!catalog) {
    std::cerr << "ferry advise: " << catalog.error() << "\n";
    return exit_status::kUsage;
  }
  cloud::RunMeasure m;
  if (!o.events.empty()) {
    std::ifstream in(o.events);
    if (!in) {
      std::cerr << "ferry advise: cannot read " << o.events << "\n";
      return exit_status::kUsage;
    }
    std::stringstream text;
    text << in.rdbuf();
    auto measured = cloud::measure_from_events(text.str());
    if (!measured && o.peak_gib == 0) {
      std::cerr << "ferry advise: " << o.events << ": " << measured.error() << "\n";
      return exit_status::kUsage;
    }
    if (measured) m = *measured;
  }
  if (o.peak_gib > 0) m.peak_bytes = static_cast<std::uint64_t>(o.peak_gib * 1024 * 1024 * 1024);
  if (o.step_time > 0) m.step_time_s = o.step_time;
  if (o.steps > 0) m.total_steps = o.steps;
  if (m.peak_bytes == 0 || m.step_time_s <= 0 || m.total_steps <= 0) {
    std::cerr << "ferry advise: give ferry-train's events (ferry train CONFIG --json > events.jsonl), or --peak-mem GIB "
                 "--step-time S --steps N\n";
    return exit_status::kUsage;
  }
  std::optional<std::uint64_t> laptop;
  if (o.laptop_gib > 0) laptop = static_cast<std::uint64_t>(o.laptop_gib * 1024 * 1024 * 1024);
  else if (m.measured_vram_bytes) laptop = m.measured_vram_bytes;
  auto a = cloud::advise(m, *catalog, laptop);
  if (o.as_json) {
    nlohmann::json fits = nlohmann::json::array();
    for (std::size_t i = 0; i < a.fits.size() && static_cast<int>(i) < o.top; ++i) fits.push_back(cloud::to_json(a.fits[i]));
    nlohmann::json j{{"hours", a.hours}, {"neededBytes", a.needed_bytes}, {"peakBytes", m.peak_bytes}, {"fits", fits}};
    if (a.laptop) j["laptop"] = *a.laptop;
    std::cout << j.dump(2) << "\n";
    return exit_status::kOk;
  }
  std::cout << fmt::format("run: {} steps x {:.3f} s = {:.2f} h (priced at {:.2f} h with 10 % margin); peak GPU memory "
                           "{:.1f} GiB (needs {:.1f} GiB with 20 % margin)\n",
                           m.total_steps, m.step_time_s, m.hours(), a.hours, m.peak_bytes / 1073741824.0, a.needed_bytes / 1073741824.0);
  if (a.fits.empty()) std::cout << "no catalog GPU has that much memory: shard the model, or add an offer (ferry.json gpuCatalog)\n";
  for (std::size_t i = 0; i < a.fits.size() && static_cast<int>(i) < o.top; ++i) {
    const auto& e = a.fits[i];
    std::cout << fmt::format("{}{:<48} {:>10}", i == 0 ? "cheapest: " : "          ", e.rate.label, cloud::format_usd(e.on_demand_cents));
    if (e.spot_cents) std::cout << fmt::format("  (spot {})", cloud::format_usd(*e.spot_cents));
    std::cout << "\n";
  }
  std::cout << "(priced at the measured step time; a faster GPU finishes sooner and costs less than shown)\n";
  if (a.laptop) std::cout << *a.laptop << "\n";
  return exit_status::kOk;
}

}  // namespace

void add_advise_command(CLI::App& app, GlobalOptions& g) {
  auto o = std::make_shared<AdviseOptions>();
  auto* cmd = app.add_subcommand("advise", "The cheapest catalog GPU that fits a ferry-train run's peak memory and step time, and its cost");
  cmd->add_option("events", o->events, "ferry-train's JSON-lines events of a (short) run: ferry train CONFIG --json > events.jsonl");
  cmd->add_option("--peak-mem", o->peak_gib, "Peak GPU memory in GiB (instead of, or over, the events')")->check(CLI::PositiveNumber);
  cmd->add_option("--step-time", o->step_time, "Seconds per optimizer step")->check(CLI::PositiveNumber);
  cmd->add_option("--steps", o->steps, "Steps of the whole run")->check(CLI::PositiveNumber);
  cmd->add_option("--laptop-vram", o->laptop_gib, "Your laptop GPU's memory in GiB: is it still enough? (default: the GPU the events came from)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--top", o->top, "How many offers to list (default 5)")->check(CLI::PositiveNumber);
  cmd->add_flag("--json", o->as_json, "Print the advice as JSON");
  cmd->fallthrough();
  cmd->callback([&g, o] { g.exit_code = run_advise(g, *o); });
}

void add_cost_command(CLI::App& app, GlobalOptions& g) {
  auto o = std::make_shared<CostOptions>();
  auto* cmd = app.add_subcommand("cost", "What a job costs on a catalog GPU, an instance type or your own price (on demand and spot)");
  auto* gpu = cmd->add_option("--gpu", o->gpu, "A GPU name from the catalog (T4, V100, A100, \"A100 80GB\", H100, ...): every offer of it");
  auto* inst = cmd->add_option("--instance", o->instance, "An instance type from the catalog (p3.2xlarge, g5.xlarge, ...)");
  cmd->add_option("--provider", o->provider, "Only this provider's offers (aws, gcp, lambda, ...)");
  auto* price = cmd->add_option("--price", o->price, "Your own on-demand price, USD per hour")->check(CLI::PositiveNumber);
  cmd->add_option("--spot-price", o->spot_price, "Your own spot price, USD per hour (with --price)")
      ->check(CLI::PositiveNumber)->needs(price);
  gpu->excludes(inst)->excludes(price);
  inst->excludes(price);
  cmd->add_option("--hours", o->hours, "How long the job runs: hours (20, 1.5) or 90m, 2h, 45s (default 1)");
  cmd->add_flag("--json", o->as_json, "Print the estimates as JSON");
  cmd->footer("Without --gpu, --instance or --price: the project's host, as ferry.json's \"price\" names it.\n"
              "Example: ferry cost --instance p3.2xlarge --hours 20");
  cmd->fallthrough();
  auto* catalog = cmd->add_subcommand("catalog", "The GPU offers ferry prices with, as a table (source and date per row)");
  catalog->add_option("--gpu", o->gpu, "Only offers of this GPU");
  catalog->add_flag("--json", o->as_json, "Print the rows as JSON");
  catalog->fallthrough();
  catalog->callback([&g, o] { g.exit_code = run_cost_catalog(g, *o); });
  cmd->callback([&g, o, catalog] {
    if (catalog->parsed()) return;
    g.exit_code = run_cost(g, *o);
  });
}

}  // namespace ferry::cli
