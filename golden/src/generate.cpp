// Writing a suite: valid cases computed on worker threads, every case written in the suite's order.
#include "kda/golden/generate.hpp"

#include <algorithm>
#include <deque>
#include <future>
#include <stdexcept>
#include <thread>

namespace kda::golden {

namespace {

std::vector<ContractCase> selected_contract_cases(const Suite& suite) {
  std::vector<ContractCase> all = contract_cases(), selected;
  for (const auto& name : suite.contract_cases) {
    const auto at = std::find_if(all.begin(), all.end(), [&](const ContractCase& c) { return c.name == name; });
    if (at == all.end()) throw std::logic_error("suite '" + suite.name + "' names an unknown contract case '" + name + "'");
    selected.push_back(std::move(*at));
  }
  return selected;
}

}  // namespace

GenerateStats generate(const Suite& suite, const std::filesystem::path& out, const GenerateOptions& options) {
  const std::vector<ContractCase> contract = selected_contract_cases(suite);
  const std::size_t total = suite.cases.size() + contract.size();
  const unsigned threads = options.threads ? options.threads : std::max(1u, std::thread::hardware_concurrency());
  File file = File::create(out, {{"suite", suite.name}, {"description", suite.description}});
  std::size_t done = 0;
  auto write = [&](const std::string& name, const Case& c) {
    file.write_case(name, c);
    if (options.progress) options.progress(++done, total, name);
  };
  // At most `threads` cases in flight; the oldest is written first, so the order never changes.
  std::deque<std::future<Case>> pending;
  std::size_t written = 0;
  for (const SuiteCase& c : suite.cases) {
    pending.push_back(std::async(std::launch::async, [&suite, &c] { return golden_case(suite, c); }));
    if (pending.size() < threads) continue;
    write(suite.cases[written++].name, pending.front().get());
    pending.pop_front();
  }
  for (; !pending.empty(); pending.pop_front()) write(suite.cases[written++].name, pending.front().get());
  for (const ContractCase& c : contract) write(contract_case_name(c.name), golden_case(suite, c));
  file.close();
  return {suite.cases.size(), contract.size(), std::filesystem::file_size(out)};
}

}  // namespace kda::golden
