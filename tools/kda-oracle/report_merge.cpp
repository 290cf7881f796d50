#include "report_merge.hpp"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <fstream>
#include <map>
#include <set>

#include "kda/properties/shell_quote.hpp"
#include "report_document.hpp"
#include "report_results.hpp"

namespace kda::cli {

namespace {

namespace fs = std::filesystem;

std::string format(const char* pattern, double value) {
  char text[64];
  std::snprintf(text, sizeof text, pattern, value);
  return text;
}

std::string label(char letter, std::size_t number) {
  std::string text = std::to_string(number);
  text.insert(text.begin(), letter);
  return text;
}

std::string text_of(const Json& j, const char* key) {
  return j.contains(key) && j[key].is_string() ? j[key].get<std::string>() : "";
}

// A unit id as a file name: "check/fla-chunk/small/untouched" -> "check_fla-chunk_small_untouched".
std::string flattened(std::string id) {
  for (char& c : id)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_' && c != '.') c = '_';
  return id;
}

// Runs the plotter; empty when the plot was made, else why not.
std::string make_plot(const ReportOptions& options, const fs::path& case_file, const fs::path& plot) {
  fs::create_directories(plot.parent_path());
  const std::string command = options.plotter + " " + props::shell_quote(case_file.string()) + " " +
                              props::shell_quote(plot.string()) + " 2>&1";
  FILE* pipe = popen(command.c_str(), "r");
  if (!pipe) return "the plotter '" + options.plotter + "' could not be started";
  std::string output;
  char buffer[4096];
  while (std::size_t n = std::fread(buffer, 1, sizeof buffer, pipe)) output.append(buffer, n);
  const int status = pclose(pipe);
  if (status == 0 && fs::exists(plot)) return "";
  while (!output.empty() && output.back() == '\n') output.pop_back();
  const std::string last = output.substr(output.rfind('\n') == std::string::npos ? 0 : output.rfind('\n') + 1);
  return "the plotter '" + options.plotter + "' " + (status == 0 ? "wrote no plot" : "failed") +
         (last.empty() ? "" : ": " + last);
}

class ReportBuilder {
 public:
  ReportBuilder(const MergedResults& results, const fs::path& report_dir, const ReportOptions& options)
      : results_(results), dir_(report_dir), options_(options), doc_("KDA conformance report") {
    for (const auto& impl : results.campaign["implementations"]) implementations_.push_back(impl["name"]);
    for (const auto& id : results.campaign["units"]) planned_.push_back(id);
  }

  Document build(ReportSummary& summary) {
    overview(summary);
    implementations();
    for (const auto& scale : results_.campaign["settings"]["scales"]) matrix(scale.get<std::string>());
    reasons();
    failures();
    golden();
    speed();
    not_run();
    pending();
    return std::move(doc_);
  }

 private:
  const UnitResult* find(const std::string& id) const {
    const auto it = results_.units.find(id);
    return it == results_.units.end() ? nullptr : &it->second;
  }

  std::string reason_label(const std::string& reason) {
    const auto [it, added] = reason_labels_.try_emplace(reason, label('R', reason_labels_.size() + 1));
    if (added) reason_order_.push_back(reason);
    return it->second;
  }

  std::string failure_label(const std::string& id) {
    const auto [it, added] = failure_labels_.try_emplace(id, label('F', failure_labels_.size() + 1));
    if (added) failure_order_.push_back(id);
    return it->second;
  }

  std::string seconds(const Json& unit) const {
    return options_.timings && unit.contains("seconds") ? ", " + format("%.1f s", unit["seconds"].get<double>()) : "";
  }

  Inline cell(const std::string& id) {
    const UnitResult* r = find(id);
    if (!r) return {plain("pending")};
    const Json& u = r->json;
    const std::string status = text_of(u, "status");
    const std::string cases = std::to_string(u.value("cases", 0));
    if (status == "pass") return {plain("pass, " + cases + seconds(u))};
    if (status == "fail") return {bold("FAIL"), plain(" " + failure_label(id) + ", " + cases + seconds(u))};
    const std::string shown = status == "not-run" ? "not run" : status;
    return {plain(shown + " (" + reason_label(text_of(u, "reason")) + ")")};
  }

  void overview(ReportSummary& summary) {
    const Json& settings = results_.campaign["settings"];
    std::set<std::string> libraries, gpus, hosts;
    std::string first, last;
    std::map<std::string, int> counts;
    for (const auto& impl : results_.campaign["implementations"]) libraries.insert(impl["library"].get<std::string>());
    for (const auto& id : planned_) {
      const UnitResult* r = find(id);
      if (!r) continue;
      ++summary.done;
      const std::string status = text_of(r->json, "status");
      ++counts[status];
      summary.failed += status == "fail";
      summary.not_run += status == "not-run";
      const Json& env = r->json.value("environment", Json::object());
      gpus.insert(text_of(env, "gpu"));
      hosts.insert(text_of(env, "host"));
      const std::string started = text_of(env, "started");
      if (first.empty() || started < first) first = started;
      if (started > last) last = started;
    }
    summary.units = static_cast<int>(planned_.size());
    const auto& cases = settings["cases"];
    const std::string suite = text_of(settings, "golden_suite");
    doc_.paragraph({plain(std::to_string(implementations_.size()) +
                          (implementations_.size() == 1 ? " implementation of " : " implementations of ") +
                          std::to_string(libraries.size()) + (libraries.size() == 1 ? " library" : " libraries") + ", seed " + settings["seed"].dump() +
                          "; cases per property: " + cases["recurrent"].dump() + " (recurrent kind) and " +
                          cases["chunked"].dump() + " (chunked) at small scale, " + cases["realistic_recurrent"].dump() +
                          " and " + cases["realistic_chunked"].dump() + " at realistic scale; " +
                          (suite.empty() ? std::string("no golden suite") : "golden suite " + suite) + ".")});
    doc_.paragraph({plain("Units: " + std::to_string(summary.done) + " of " + std::to_string(summary.units) +
                          " done: " + std::to_string(counts["pass"]) + " pass, "),
                    bold(std::to_string(counts["fail"]) + " FAIL"),
                    plain(", " + std::to_string(counts["skipped"]) + " skipped, " + std::to_string(counts["not-run"]) +
                          " not run" +
                          (summary.done < summary.units
                               ? "; " + std::to_string(summary.units - summary.done) +
                                     " not yet run (rerun the campaign to continue)."
                               : "."))});
    std::string machines;
    for (const auto& g : gpus) machines += (machines.empty() ? "" : ", ") + g;
    Inline env{plain("GPU: " + (machines.empty() ? std::string("-") : machines) + "; " + std::to_string(hosts.size()) +
                     (hosts.size() == 1 ? " machine" : " machines"))};
    if (options_.timings && !first.empty()) env.push_back(plain("; units run from " + first + " to " + last));
    env.push_back(plain("."));
    doc_.paragraph(env);
  }

  void implementations() {
    std::map<std::string, std::pair<std::string, std::string>> judged;  // adapter, precision model
    for (const auto& [id, r] : results_.units)
      if (r.json.contains("precision_model"))
        judged.try_emplace(text_of(r.json, "implementation"), text_of(r.json, "adapter"),
                           text_of(r.json, "precision_model"));
    std::vector<std::vector<Inline>> rows;
    for (const auto& impl : results_.campaign["implementations"]) {
      const auto it = judged.find(impl["name"]);
      const bool known = it != judged.end();
      rows.push_back({{plain(impl["name"])},
                      {plain(impl["library"])},
                      {plain(impl["kind"])},
                      {plain(known ? it->second.first : "-")},
                      {plain(known ? it->second.second : "-")},
                      {code(impl["kernel"])}});
    }
    doc_.heading(1, "Implementations");
    doc_.paragraph({plain("Each implementation is judged against the precision model its adapter declares "
                          "(\"precision model\"): the tolerance is set by that model's error against the fp64 "
                          "reference.")});
    doc_.table({{plain("implementation")}, {plain("library")}, {plain("kind")}, {plain("adapter")},
                {plain("precision model")}, {plain("kernel")}},
               std::move(rows));
  }

  void matrix(const std::string& scale) {
    std::vector<std::string> properties;  // in the plan's order
    for (const auto& impl : implementations_)
      for (const auto& id : planned_) {
        const std::string prefix = "check/" + impl + "/" + scale + "/";
        if (id.rfind(prefix, 0) == 0 &&
            std::find(properties.begin(), properties.end(), id.substr(prefix.size())) == properties.end())
          properties.push_back(id.substr(prefix.size()));
      }
    if (properties.empty()) return;
    std::vector<Inline> header{{plain("property")}};
    for (const auto& impl : implementations_) header.push_back({plain(impl)});
    std::vector<std::vector<Inline>> rows;
    for (const auto& property : properties) {
      std::vector<Inline> row{{plain(property)}};
      for (const auto& impl : implementations_) row.push_back(cell("check/" + impl + "/" + scale + "/" + property));
      rows.push_back(std::move(row));
    }
    doc_.heading(1, "Matrix at " + scale + " scale");
    doc_.paragraph({plain("Each cell: the verdict, then the cases run" +
                          std::string(options_.timings ? " and the seconds" : "") +
                          "; a failure's label (F...) leads to its details below, a reason's (R...) to the list of "
                          "reasons.")});
    doc_.table(std::move(header), std::move(rows));
  }

  void reasons() {
    // The golden and speed units' reasons are labelled by their own tables; collect those first.
    for (const auto& id : planned_)
      if (id.rfind("check/", 0) != 0 && find(id)) {
        const Json& u = find(id)->json;
        if (text_of(u, "status") == "not-run" || text_of(u, "status") == "skipped") reason_label(text_of(u, "reason"));
      }
    listed_reasons_ = reason_order_.size();
    if (reason_order_.empty()) return;
    doc_.heading(2, "Reasons");
    std::vector<Inline> items;
    for (const auto& reason : reason_order_) items.push_back({bold(reason_labels_[reason]), plain(": " + reason)});
    doc_.list(std::move(items));
  }

  void failures() {
    for (const auto& id : planned_)
      if (const UnitResult* r = find(id); r && text_of(r->json, "status") == "fail") failure_label(id);
    doc_.heading(1, "Failures");
    if (failure_order_.empty()) {
      doc_.paragraph({plain("None.")});
      return;
    }
    for (const auto& id : failure_order_) {
      const UnitResult& r = *find(id);
      const Json& u = r.json;
      doc_.heading(2, failure_labels_[id] + ": " + text_of(u, "implementation") + ", " +
                          (u.contains("property") ? text_of(u, "property") + " at " + text_of(u, "scale") + " scale"
                                                  : text_of(u, "type")));
      if (text_of(u, "type") == "check") {
        check_failure(r);
      } else if (text_of(u, "type") == "golden") {
        std::vector<Inline> items;
        for (const auto& f : u["failures"]) items.push_back({code(text_of(f, "case")), plain(": " + text_of(f, "why"))});
        doc_.paragraph({plain(std::to_string(u.value("failed", 0)) + " of " + std::to_string(u.value("cases", 0)) +
                              " golden cases failed:")});
        doc_.list(std::move(items));
        doc_.code_block(text_of(u, "replay"));
      }
    }
  }

  void check_failure(const UnitResult& r) {
    const Json& f = r.json["failure"];
    doc_.paragraph({bold("Diagnosis:"), plain(" " + text_of(f, "diagnosis"))});
    if (!text_of(f, "replay").empty()) doc_.code_block(text_of(f, "replay"));
    const std::string case_file = text_of(f, "case_file");
    if (case_file.empty()) {
      doc_.paragraph({plain("No case file was saved.")});
      return;
    }
    const fs::path source = r.file.parent_path() / case_file;
    if (!fs::exists(source)) {
      doc_.paragraph({plain("The case file " + source.string() + " is missing.")});
      return;
    }
    const std::string name = flattened(text_of(r.json, "unit")) + ".h5";  // one per unit (scales share names)
    fs::create_directories(dir_ / "cases");
    fs::copy_file(source, dir_ / "cases" / name, fs::copy_options::overwrite_existing);
    const fs::path plot = fs::path("plots") / (flattened(text_of(r.json, "unit")) + ".svg");
    const std::string why = make_plot(options_, dir_ / "cases" / name, dir_ / plot);
    doc_.paragraph({plain("Shrunk case: "), link("cases/" + name, "cases/" + name)});
    if (why.empty())
      doc_.paragraph({image("error against token position and head", plot.string())});
    else
      doc_.paragraph({plain("Plot not made: " + why)});
  }

  void golden() {
    std::vector<std::vector<Inline>> rows;
    for (const auto& impl : implementations_) {
      const std::string id = "golden/" + impl;
      const UnitResult* r = find(id);
      if (!r) {
        if (std::find(planned_.begin(), planned_.end(), id) != planned_.end())
          rows.push_back({{plain(impl)}, {plain("pending")}, {}, {}, {}, {}});
        continue;
      }
      const Json& u = r->json;
      if (text_of(u, "status") == "not-run") {
        rows.push_back({{plain(impl)}, cell(id), {}, {}, {}, {}});
        continue;
      }
      rows.push_back({{plain(impl)}, cell(id), {plain(std::to_string(u.value("passed", 0)))},
                      {plain(std::to_string(u.value("failed", 0)))}, {plain(std::to_string(u.value("skipped", 0)))},
                      {plain(options_.timings ? format("%.1f", u.value("seconds", 0.0)) : "-")}});
    }
    if (rows.empty()) return;
    doc_.heading(1, "Golden suite " + text_of(results_.campaign["settings"], "golden_suite"));
    doc_.table({{plain("implementation")}, {plain("verdict, cases")}, {plain("passed")}, {plain("failed")},
                {plain("skipped")}, {plain("seconds")}},
               std::move(rows));
  }

  void speed() {
    std::vector<std::vector<Inline>> rows;
    for (const auto& impl : implementations_) {
      const UnitResult* r = find("speed/" + impl);
      if (!r) continue;
      const Json& u = r->json;
      if (!u.contains("shapes")) {
        rows.push_back({{plain(impl)}, {plain("-")}, {plain("-")}, cell("speed/" + impl), {}, {}});
        continue;
      }
      for (const auto& s : u["shapes"]) {
        Inline median, rate, timed_by;
        if (s.contains("skipped")) {
          median = {plain("skipped (" + reason_label(text_of(s, "skipped")) + ")")};
        } else if (options_.timings) {
          median = {plain(format("%.3f ms", 1e3 * s["median_seconds"].get<double>()))};
          rate = {plain(format("%.4g", s["tokens_per_second"].get<double>()))};
          timed_by = {plain(text_of(s, "timing") == "adapter" ? "the adapter" : "kda-oracle")};
        } else {
          median = {plain("timed")};
        }
        rows.push_back({{plain(impl)}, {plain(text_of(s, "shape"))}, {plain(std::to_string(s.value("tokens", 0)))},
                        median, rate, timed_by});
      }
    }
    if (rows.empty()) return;
    doc_.heading(1, "Speed");
    doc_.paragraph({plain("Benchmark shapes (" + text_of(results_.campaign["settings"], "bench_shapes") +
                          "): the median of " + results_.campaign["settings"]["bench_calls"].dump() +
                          " calls after a warm-up call, each timed by the adapter where it reports its calls' "
                          "seconds, else by kda-oracle around the call (request files included).")});
    doc_.table({{plain("implementation")}, {plain("shape")}, {plain("tokens")}, {plain("median call")},
                {plain("tokens/s")}, {plain("timed by")}},
               std::move(rows));
    reasons_after_speed();
  }

  // Reasons first named by the speed table (skipped shapes) are listed after it.
  void reasons_after_speed() {
    std::vector<Inline> items;
    for (std::size_t i = listed_reasons_; i < reason_order_.size(); ++i)
      items.push_back({bold(reason_labels_[reason_order_[i]]), plain(": " + reason_order_[i])});
    listed_reasons_ = reason_order_.size();
    if (!items.empty()) doc_.list(std::move(items));
  }

  void not_run() {
    std::vector<std::vector<Inline>> rows;
    for (const auto& n : results_.campaign["not_run"])
      rows.push_back({{plain(n["library"])}, {plain(n["name"])}, {plain(n["reason"])}});
    doc_.heading(1, "Not run");
    if (rows.empty()) {
      doc_.paragraph({plain("The plan lists no implementation it could not run.")});
      return;
    }
    doc_.paragraph({plain("Implementations the plan lists as impossible to run here, with the reason:")});
    doc_.table({{plain("library")}, {plain("implementation")}, {plain("reason")}}, std::move(rows));
  }

  void pending() {
    std::vector<Inline> items;
    for (const auto& id : planned_)
      if (!find(id)) items.push_back({code(id)});
    if (items.empty()) return;
    doc_.heading(1, "Not yet run");
    doc_.paragraph({plain(std::to_string(items.size()) +
                          " units have no result in the merged folders (a shard or a run that has not finished):")});
    doc_.list(std::move(items));
  }

  const MergedResults& results_;
  fs::path dir_;
  ReportOptions options_;
  Document doc_;
  std::vector<std::string> implementations_, planned_;
  std::map<std::string, std::string> reason_labels_, failure_labels_;
  std::vector<std::string> reason_order_, failure_order_;
  std::size_t listed_reasons_ = 0;
};

}  // namespace

ReportSummary write_report(const std::vector<fs::path>& results_dirs, const fs::path& report_dir,
                           const ReportOptions& options) {
  const MergedResults results = merge_results(results_dirs);
  fs::create_directories(report_dir);
  ReportSummary summary;
  const Document doc = ReportBuilder(results, report_dir, options).build(summary);
  std::ofstream(report_dir / "conformance.md") << doc.markdown();
  std::ofstream(report_dir / "index.html") << doc.html();
  return summary;
}

}  // namespace kda::cli
