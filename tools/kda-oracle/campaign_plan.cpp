#include "campaign_plan.hpp"

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <stdexcept>

namespace kda::cli {

namespace {

using nlohmann::json;

std::runtime_error error(const std::filesystem::path& file, const std::string& what) {
  return std::runtime_error("plan " + file.string() + ": " + what);
}

std::string text(const json& object, const char* key, const std::filesystem::path& file, const std::string& where) {
  if (!object.contains(key) || !object[key].is_string() || object[key].get<std::string>().empty())
    throw error(file, where + "\"" + key + "\" must be a non-empty string");
  return object[key].get<std::string>();
}

ImplementationKind kind_of(const std::string& kind, const std::filesystem::path& file, const std::string& where) {
  if (kind == "recurrent") return ImplementationKind::recurrent;
  if (kind == "chunked") return ImplementationKind::chunked;
  throw error(file, where + "\"kind\" is '" + kind + "', expected recurrent or chunked");
}

void read_file(const std::filesystem::path& file, Plan& plan) {
  std::ifstream in(file);
  json doc;
  try {
    doc = json::parse(in);
  } catch (const json::parse_error& e) {
    throw error(file, std::string("not JSON: ") + e.what());
  }
  if (!doc.is_object()) throw error(file, "expected an object with \"library\" and \"implementations\"");
  const std::string library = text(doc, "library", file, "");
  if (!doc.contains("implementations") || !doc["implementations"].is_array())
    throw error(file, "\"implementations\" must be an array");
  for (const auto& entry : doc["implementations"]) {
    const std::string where = "implementation " + std::to_string(&entry - &doc["implementations"][0]) + ": ";
    if (!entry.is_object()) throw error(file, where + "expected an object");
    Implementation impl;
    impl.library = library;
    impl.name = text(entry, "name", file, where);
    if (impl.name.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.") !=
        std::string::npos)
      throw error(file, where + "name '" + impl.name + "' may hold letters, digits, '-', '_' and '.' only");
    impl.kernel = text(entry, "kernel", file, where);
    impl.golden_kernel = entry.contains("golden_kernel") ? text(entry, "golden_kernel", file, where) : impl.kernel;
    impl.kind = kind_of(text(entry, "kind", file, where), file, where);
    if (entry.contains("bench")) {
      if (!entry["bench"].is_boolean()) throw error(file, where + "\"bench\" must be true or false");
      impl.bench = entry["bench"].get<bool>();
    }
    plan.implementations.push_back(std::move(impl));
  }
  if (doc.contains("not_run")) {
    if (!doc["not_run"].is_array()) throw error(file, "\"not_run\" must be an array");
    for (const auto& entry : doc["not_run"])
      plan.not_run.push_back({library, text(entry, "name", file, "not_run: "), text(entry, "reason", file, "not_run: ")});
  }
}

}  // namespace

Plan load_plan(const std::filesystem::path& dir) {
  if (!std::filesystem::is_directory(dir)) throw std::runtime_error("plan " + dir.string() + ": not a folder");
  std::vector<std::filesystem::path> files;
  for (const auto& entry : std::filesystem::directory_iterator(dir))
    if (entry.path().extension() == ".json") files.push_back(entry.path());
  std::sort(files.begin(), files.end());
  if (files.empty()) throw std::runtime_error("plan " + dir.string() + ": no *.json file");
  Plan plan;
  std::set<std::string> names;
  for (const auto& file : files) {
    const std::size_t before = plan.implementations.size();
    read_file(file, plan);
    for (std::size_t i = before; i < plan.implementations.size(); ++i)
      if (!names.insert(plan.implementations[i].name).second)
        throw error(file, "implementation name '" + plan.implementations[i].name + "' is used twice in the plan");
  }
  return plan;
}

std::string_view name_of(ImplementationKind kind) {
  return kind == ImplementationKind::recurrent ? "recurrent" : "chunked";
}

}  // namespace kda::cli
